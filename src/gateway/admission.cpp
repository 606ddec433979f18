#include "gateway/admission.h"

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "openai/json_scan.h"

namespace switchyard::gateway {

namespace net = boost::asio;
using net::awaitable;
using namespace net::experimental::awaitable_operators;
using openai::ApiError;
using tenancy::Clock;
using tenancy::Duration;

struct KeyWaiter {
  explicit KeyWaiter(net::any_io_executor ex) : timer(ex) {}
  enum class State { waiting, granted, revoked, closed };
  net::steady_timer timer;  // expires at the wait bound or a seat's idle-out; cancelled to wake
  std::string seat;         // the session it needs a seat for; empty: none
  State state = State::waiting;
  bool shared = false;  // asks Redis itself: a wake only makes it ask again
};

namespace {

// Whether the key has room now for a request of `session` (empty: one that
// needs no seat).
bool has_room(KeyState& s, const std::string& session, tenancy::Time now) {
  if (s.limits.max_concurrency && s.running >= *s.limits.max_concurrency) return false;
  if (session.empty()) return true;
  return s.seats.seated(session, now) || s.seats.active(now) < s.seats.cap();
}

void take_room(KeyState& s, const std::string& session, tenancy::Time now) {
  ++s.running;
  if (!session.empty()) s.seats.enter(session, now);
}

int whole_seconds_up(Duration d) {
  return static_cast<int>(
      std::max<std::int64_t>(1, std::chrono::ceil<std::chrono::seconds>(d).count()));
}

std::string seconds_text(Duration d) {
  return fmt::format("{} s", whole_seconds_up(d));
}

ApiError limit_error(std::string message, std::string code, Duration retry_after) {
  ApiError e = ApiError::rate_limited(std::move(message), std::move(code));
  e.retry_after = whole_seconds_up(retry_after);
  return e;
}

void add_rate_headers(RequestContext& ctx, const KeyState& s, tenancy::Time now) {
  auto& h = ctx.response_headers;
  if (s.rpm) {
    h.set("x-ratelimit-limit-requests", std::to_string(s.rpm->limit()));
    h.set("x-ratelimit-remaining-requests", std::to_string(s.rpm->remaining(now)));
    h.set("x-ratelimit-reset-requests", reset_text(s.rpm->reset(now)));
  }
  if (s.tpm) {
    h.set("x-ratelimit-limit-tokens", std::to_string(s.tpm->limit()));
    h.set("x-ratelimit-remaining-tokens", std::to_string(s.tpm->remaining(now)));
    h.set("x-ratelimit-reset-tokens", reset_text(s.tpm->reset(now)));
  }
}

// The 429s of each limit, one wording whether the limits are this
// gateway's own or shared through Redis.
ApiError rpm_error(const std::string& name, std::int64_t rpm, Duration retry_after) {
  return limit_error(fmt::format("the key '{}' is over its limit of {} requests per minute; "
                                 "retry in {}",
                                 name, rpm, seconds_text(retry_after)),
                     "rate_limit_exceeded", retry_after);
}

ApiError tpm_error(const std::string& name, std::int64_t tpm, std::int64_t cost,
                   Duration retry_after) {
  return limit_error(fmt::format("the key '{}' is over its limit of {} tokens per minute "
                                 "(this request reserves {}); retry in {}",
                                 name, tpm, cost, seconds_text(retry_after)),
                     "rate_limit_exceeded", retry_after);
}

ApiError budget_error(const std::string& name, std::int64_t used, std::int64_t limit,
                      std::int64_t cost, Duration retry_after) {
  return limit_error(
      fmt::format("the key '{}' has used {} of its {} tokens for today (UTC; this request "
                  "reserves {}); the budget renews in {}",
                  name, used, limit, cost, seconds_text(retry_after)),
      "budget_exceeded", retry_after);
}

// `shared`: counted across the gateways on one Redis. `frees`: when the
// oldest seat frees; nullopt while every seated session runs a request.
ApiError sessions_error(const std::string& name, int cap, std::optional<Duration> frees,
                        Duration idle, bool shared) {
  const Duration until = frees.value_or(idle);
  return limit_error(
      fmt::format("the key '{}' has {} active session(s), its max_sessions{}; the oldest seat "
                  "frees in {}{} (a session idles out {} after its last request)",
                  name, cap, shared ? ", across the gateways sharing its limits" : "",
                  seconds_text(until), frees ? "" : " after its running request ends",
                  seconds_text(idle)),
      "session_limit_exceeded", until);
}

ApiError concurrency_error(const std::string& name, int cap, Duration waited, bool shared) {
  return limit_error(
      fmt::format("the key '{}' has {} request(s) running, its max_concurrency{}, "
                  "and none finished within {}",
                  name, cap, shared ? ", across the gateways sharing its limits" : "",
                  seconds_text(waited)),
      "concurrency_limit_exceeded", std::chrono::seconds(1));
}

ApiError tokens_over_tpm(const std::string& name, std::int64_t cost, std::int64_t tpm) {
  return limit_error(
      fmt::format("the request may use {} tokens (prompt estimate + max_tokens), more than the "
                  "key '{}' may use per minute ({}); lower max_tokens",
                  cost, name, tpm),
      "rate_limit_exceeded", std::chrono::minutes(1));
}

void add_shared_rate_headers(RequestContext& ctx, const tenancy::KeyLimits& l,
                             const tenancy::RatesTaken& t) {
  auto& h = ctx.response_headers;
  if (l.rpm) {
    h.set("x-ratelimit-limit-requests", std::to_string(*l.rpm));
    h.set("x-ratelimit-remaining-requests", std::to_string(t.requests.remaining));
    h.set("x-ratelimit-reset-requests", reset_text(t.requests.reset));
  }
  if (l.tpm) {
    h.set("x-ratelimit-limit-tokens", std::to_string(*l.tpm));
    h.set("x-ratelimit-remaining-tokens", std::to_string(t.tokens.remaining));
    h.set("x-ratelimit-reset-tokens", reset_text(t.tokens.reset));
  }
}

// The 429 of a rate the shared script refused, worded as the local one.
ApiError shared_rate_error(const std::string& name, const tenancy::KeyLimits& l,
                           const tenancy::RatesTaken& t, std::int64_t cost) {
  using R = tenancy::RatesTaken::Refused;
  if (t.refused == R::rpm) return rpm_error(name, l.rpm.value_or(0), t.retry_after);
  if (t.refused == R::tpm) return tpm_error(name, l.tpm.value_or(0), cost, t.retry_after);
  return budget_error(name, t.used_today, l.tokens_per_day.value_or(0), cost, t.retry_after);
}

// The first limit of rpm, tpm and tokens per day that `cost` does not fit.
std::optional<ApiError> rate_refusal(const KeyState& s, std::int64_t cost, tenancy::Time now) {
  if (s.rpm) {
    if (auto t = s.rpm->peek(now, 1); !t.ok)
      return rpm_error(s.name, s.rpm->limit(), t.retry_after);
  }
  if (s.tpm) {
    if (cost > s.tpm->limit()) return tokens_over_tpm(s.name, cost, s.tpm->limit());
    if (auto t = s.tpm->peek(now, cost); !t.ok)
      return tpm_error(s.name, s.tpm->limit(), cost, t.retry_after);
  }
  if (s.day) {
    if (auto t = s.day->peek(now, cost); !t.ok)
      return budget_error(s.name, s.day->used(now), s.day->limit(), cost, t.retry_after);
  }
  return std::nullopt;
}

bool generates(openai::Endpoint e) {
  using E = openai::Endpoint;
  return e == E::chat_completions || e == E::completions || e == E::native_completion ||
         e == E::infill || e == E::messages;
}

}  // namespace

KeyState::KeyState(std::string name_, const tenancy::KeyLimits& limits_, tenancy::WallClock now_)
    : name(std::move(name_)), now(std::move(now_)), seats(1, limits_.session_idle) {
  set_limits(limits_);
}

void KeyState::set_limits(const tenancy::KeyLimits& next) {
  const bool fresh = !rpm && !tpm && !day && running == 0;
  if (fresh || next.rpm != limits.rpm)
    rpm =
        next.rpm ? std::optional(tenancy::Gcra(*next.rpm, std::chrono::minutes(1))) : std::nullopt;
  if (fresh || next.tpm != limits.tpm)
    tpm =
        next.tpm ? std::optional(tenancy::Gcra(*next.tpm, std::chrono::minutes(1))) : std::nullopt;
  if (fresh || next.tokens_per_day != limits.tokens_per_day)
    day = next.tokens_per_day ? std::optional(tenancy::DayBudget(*next.tokens_per_day))
                              : std::nullopt;
  seats.set(next.max_sessions.value_or(1), next.session_idle);
  limits = next;
}

void KeyState::carry_on_from(const SharedReading& last, const tenancy::KeyLimits& whole,
                             int gateways) {
  const std::int64_t n = std::max(1, gateways);
  const auto t = now();
  const auto refilled = [&](std::int64_t remaining, std::int64_t limit) {
    const auto minutes = std::chrono::duration<double, std::ratio<60>>(t - last.at).count();
    return std::min<std::int64_t>(
        limit,
        remaining + static_cast<std::int64_t>(std::max(0.0, minutes) * static_cast<double>(limit)));
  };
  if (rpm && whole.rpm) rpm->start_at(t, refilled(last.rates.requests.remaining, *whole.rpm) / n);
  if (tpm && whole.tpm) tpm->start_at(t, refilled(last.rates.tokens.remaining, *whole.tpm) / n);
  if (day && whole.tokens_per_day && tenancy::utc_day(last.at) == tenancy::utc_day(t)) {
    const std::int64_t left =
        std::max<std::int64_t>(0, *whole.tokens_per_day - last.rates.used_today);
    day->adjust(t, day->limit() - left / n);
  }
}

KeyTicket& KeyTicket::operator=(KeyTicket&& o) noexcept {
  if (this != &o) {
    release();
    state_ = std::move(o.state_);
    session_ = std::move(o.session_);
    reserved_ = o.reserved_;
    shared_ = std::move(o.shared_);
    lease_ = std::exchange(o.lease_, 0);
    o.state_.reset();
  }
  return *this;
}

void KeyTicket::correct(std::int64_t used, tenancy::Time now) {
  if (lease_) {
    if (auto shared = shared_.lock()) shared->correct(lease_, used);
    return;
  }
  auto s = state_.lock();
  if (!s) return;
  const std::int64_t delta = used - reserved_;
  if (s->tpm) s->tpm->adjust(delta);
  if (s->day) s->day->adjust(now, delta);
  reserved_ = used;
}

void KeyTicket::refund() {
  if (auto shared = shared_.lock(); shared && lease_) shared->refund(lease_);
}

void KeyTicket::release() {
  auto s = state_.lock();
  state_.reset();
  if (const auto lease = std::exchange(lease_, 0)) {
    if (auto shared = shared_.lock()) shared->close(lease);
    shared_.reset();
    if (s) serve_waiters(*s);  // waiters on this gateway ask Redis again at once
    return;
  }
  if (!s) return;
  --s->running;
  if (!session_.empty()) s->seats.leave(session_, s->now());
  serve_waiters(*s);
}

void serve_waiters(KeyState& s) {
  const auto now = s.now();
  for (KeyWaiter* w : s.waiters) {
    if (w->state != KeyWaiter::State::waiting) continue;
    if (w->shared) {
      if (s.revoked) w->state = KeyWaiter::State::revoked;
      w->timer.cancel();
      continue;
    }
    if (s.revoked) {
      w->state = KeyWaiter::State::revoked;
    } else if (has_room(s, w->seat, now)) {
      take_room(s, w->seat, now);
      w->state = KeyWaiter::State::granted;
    } else {
      continue;
    }
    w->timer.cancel();
  }
}

std::int64_t estimated_tokens(const RequestContext& ctx) {
  const auto prompt = static_cast<std::int64_t>(ctx.facts.prompt.length / 4);
  const bool generating = ctx.route.endpoint && generates(*ctx.route.endpoint);
  const std::int64_t output = generating ? ctx.facts.max_tokens.value_or(1024) : 0;
  // Saturated: a max_tokens near 2^63 must not wrap around to a cost that fits.
  constexpr auto kMost = std::numeric_limits<std::int64_t>::max();
  return std::max<std::int64_t>(1, output > kMost - prompt ? kMost : prompt + output);
}

std::string reset_text(Duration d) {
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(d).count();
  if (ms < 1000) return fmt::format("{}ms", ms);
  const auto s = (ms + 999) / 1000;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{}s", s / 60, s % 60);
  return fmt::format("{}h{}m{}s", s / 3600, s % 3600 / 60, s % 60);
}

awaitable<Verdict> Authenticate::run(RequestContext& ctx) {
  if (!keys_.enabled()) co_return Verdict::next;
  if (const KeyEntry* key = keys_.find(ctx.request.head.headers)) {
    ctx.key_name = key->name;
    co_return Verdict::next;
  }
  // Fails closed: a key may be among the records still to come from Redis.
  const ApiError error =
      keys_.pending()
          ? ApiError::unavailable("the API keys shared through redis have not been read yet",
                                  "keys_unavailable")
          : ApiError::unauthorized("the API key is not valid");
  co_await ctx.answer(error);
  co_return Verdict::answered;
}

Admit::Admit(net::any_io_executor executor, const bool& draining, const ApiKeys& keys,
             const config::QueueOptions& queue, tenancy::WallClock now)
    : executor_(executor), now_(std::move(now)), draining_(draining), keys_(keys), queue_(queue) {}

std::shared_ptr<KeyState> Admit::state_for(const KeyEntry& key) {
  auto it = states_.find(key.name);
  if (it == states_.end()) {
    it = states_.emplace(key.name, std::make_shared<KeyState>(key.name, key.limits, now_)).first;
    start_budget(*it->second);
  }
  return it->second;
}

void Admit::start_budgets(std::map<std::string, std::int64_t, std::less<>> spent,
                          tenancy::Time as_of) {
  spent_before_ = std::move(spent);
  spent_as_of_ = as_of;
  for (auto& [name, state] : states_) start_budget(*state);
}

void Admit::start_budget(KeyState& state) {
  auto spent = spent_before_.find(state.name);
  if (spent == spent_before_.end()) return;
  // Counted on the day it was spent: past midnight it no longer applies.
  if (state.day) state.day->adjust(spent_as_of_, spent->second);
  spent_before_.erase(spent);
}

awaitable<Verdict> Admit::run(RequestContext& ctx) {
  if (draining_) {
    // Requests already in flight or queued finish; new ones go elsewhere.
    const ApiError error = ApiError::unavailable("the gateway is shutting down", "shutting_down");
    co_await ctx.answer(error, /*close=*/true);
    co_return Verdict::answered;
  }
  if (ctx.key_name.empty()) co_return Verdict::next;
  const KeyEntry* key = keys_.by_name(ctx.key_name);
  if (!key) {
    const ApiError error = ApiError::unauthorized("the API key was revoked");
    co_await ctx.answer(error);
    co_return Verdict::answered;
  }
  const auto& models = key->limits.models;
  if (!models.empty() && std::find(models.begin(), models.end(), ctx.model) == models.end()) {
    ApiError error = ApiError::forbidden(
        fmt::format("the key '{}' may not use the model '{}'", key->name, ctx.client_model));
    error.code = "model_not_allowed";
    co_await ctx.answer(error);
    co_return Verdict::answered;
  }
  std::shared_ptr<KeyState> state = state_for(*key);
  const std::int64_t cost = estimated_tokens(ctx);
  ctx.share = QueueShare{key->limits.priority, key->limits.weight, cost};
  if (shared_ && tenancy::needs_shared_state(key->limits)) {
    const KeyEntry entry = *key;  // the key table may be swapped while Redis answers
    std::string failure = shared_->up() ? std::string() : shared_->client().last_error();
    if (failure.empty()) {
      if (auto verdict = co_await run_shared(ctx, entry, state, cost, failure)) co_return *verdict;
    }
    if (!local_when_down_) {
      ApiError error = ApiError::unavailable(shared_->down_message(failure), "limits_unavailable");
      error.retry_after = 1;
      co_await ctx.answer(error);
      co_return Verdict::answered;
    }
    state = fallback_for(entry);
  }
  co_return co_await run_local(ctx, std::move(state), cost);
}

awaitable<Verdict> Admit::run_local(RequestContext& ctx, std::shared_ptr<KeyState> state,
                                    std::int64_t cost) {
  auto now = now_();
  if (auto refusal = rate_refusal(*state, cost, now)) {
    add_rate_headers(ctx, *state, now);
    co_await ctx.answer(*refusal);
    co_return Verdict::answered;
  }

  const std::string seat = seat_of(ctx, state->limits);
  if (state->waiters.empty() && has_room(*state, seat, now)) {
    take_room(*state, seat, now);
  } else {
    // The wait for the key's concurrency or a session seat.
    obs::ScopedSpan span(ctx.trace, "switchyard.key_wait");
    span.set("switchyard.key", state->name);
    KeyWaiter waiter(executor_);
    waiter.seat = seat;
    const auto place = state->waiters.insert(state->waiters.end(), &waiter);
    serve_waiters(*state);  // a seated session's request may go ahead of those waiting for seats
    const auto wait_start = std::chrono::steady_clock::now();
    const auto deadline = wait_start + queue_.max_wait;
    bool client_gone = false;
    while (waiter.state == KeyWaiter::State::waiting && !closed_) {
      // Wake at the bound, or when the first idle seat frees.
      auto wake = deadline;
      if (!seat.empty()) {
        if (auto frees = state->seats.next_free(now_()))
          wake = std::min(wake, std::chrono::steady_clock::now() +
                                    std::chrono::ceil<std::chrono::milliseconds>(*frees - now_()));
      }
      waiter.timer.expires_at(wake);
      auto woken = co_await (waiter.timer.async_wait(net::as_tuple(net::use_awaitable)) ||
                             ctx.exchange.until_client_gone());
      if (woken.index() == 1) {
        client_gone = true;
        break;
      }
      if (waiter.state != KeyWaiter::State::waiting) break;
      serve_waiters(*state);  // an idle seat may have freed
      if (waiter.state == KeyWaiter::State::waiting && std::chrono::steady_clock::now() >= deadline)
        break;
    }
    state->waiters.erase(place);
    ctx.waited_for_key = std::chrono::steady_clock::now() - wait_start;
    if (closed_ && waiter.state == KeyWaiter::State::waiting)
      waiter.state = KeyWaiter::State::closed;
    // From here what was granted is the ticket's to give back.
    if (waiter.state == KeyWaiter::State::granted) ctx.ticket = KeyTicket(state, seat, 0);
    if (client_gone) {
      ctx.record.client_gone = true;
      span.fail("client_closed");
      co_return Verdict::answered;
    }
    now = now_();
    std::optional<ApiError> error;
    switch (waiter.state) {
      case KeyWaiter::State::granted:
        break;
      case KeyWaiter::State::revoked:
        error = ApiError::unauthorized("the API key was revoked");
        break;
      case KeyWaiter::State::closed:
        error = ApiError::unavailable("the gateway is shutting down", "shutting_down");
        break;
      case KeyWaiter::State::waiting:
        if (!seat.empty() && !has_room(*state, seat, now) &&
            (!state->limits.max_concurrency || state->running < *state->limits.max_concurrency)) {
          std::optional<Duration> frees;
          if (const auto at = state->seats.next_free(now)) frees = *at - now;
          error = sessions_error(state->name, state->seats.cap(), frees, state->limits.session_idle,
                                 false);
        } else {
          error = concurrency_error(state->name, state->limits.max_concurrency.value_or(0),
                                    queue_.max_wait, false);
        }
        break;
    }
    if (error) {
      span.fail(error->code.empty() ? error->message : error->code);
      add_rate_headers(ctx, *state, now);
      co_await ctx.answer(*error);
      co_return Verdict::answered;
    }
  }
  if (!ctx.ticket) ctx.ticket = KeyTicket(state, seat, 0);
  // The rates again: the wait may have used them up.
  if (auto refusal = rate_refusal(*state, cost, now)) {
    ctx.ticket.release();
    add_rate_headers(ctx, *state, now);
    co_await ctx.answer(*refusal);
    co_return Verdict::answered;
  }
  if (state->rpm) state->rpm->take(now, 1);
  if (state->tpm) state->tpm->take(now, cost);
  if (state->day) state->day->take(now, cost);
  ctx.ticket.set_reserved(cost);  // corrected to the usage at the end
  add_rate_headers(ctx, *state, now);
  co_return Verdict::next;
}

awaitable<std::optional<Verdict>> Admit::run_shared(RequestContext& ctx, const KeyEntry& key,
                                                    std::shared_ptr<KeyState> state,
                                                    std::int64_t cost, std::string& failure) {
  const auto& limits = key.limits;
  if (limits.tpm && cost > *limits.tpm) {
    co_await ctx.answer(tokens_over_tpm(key.name, cost, *limits.tpm));
    co_return Verdict::answered;
  }
  const std::string seat = seat_of(ctx, limits);
  ctx.ticket = KeyTicket(state, shared_, shared_->open(key.name, limits, seat));
  const std::uint64_t lease = ctx.ticket.lease();
  if (limits.rpm || limits.tpm || limits.tokens_per_day) {
    auto taken = co_await shared_->take_rates(lease, cost);
    if (!taken) {
      failure = taken.error().message;
      ctx.ticket.release();
      co_return std::nullopt;
    }
    add_shared_rate_headers(ctx, limits, *taken);
    state->last_shared = KeyState::SharedReading{*taken, now_()};
    // Redis answers again: an outage's split counters are done with.
    if (auto it = fallback_.find(key.name);
        it != fallback_.end() && it->second->running == 0 && it->second->waiters.empty())
      fallback_.erase(it);
    if (taken->refused != tenancy::RatesTaken::Refused::none) {
      ctx.ticket.release();
      co_await ctx.answer(shared_rate_error(key.name, limits, *taken, cost));
      co_return Verdict::answered;
    }
  }
  if (!limits.max_concurrency && !limits.max_sessions) co_return Verdict::next;

  // Waits by asking again: when a lease of the key ends on any gateway (one
  // elsewhere is published: wake()), or on redis_poll's timer for a lost
  // message, bounded by queue.max_wait.
  const auto retry = shared_->poll();
  obs::ScopedSpan span(ctx.trace, "switchyard.key_wait");
  span.set("switchyard.key", key.name);
  span.set("switchyard.limits", std::string("shared"));
  KeyWaiter waiter(executor_);
  waiter.shared = true;
  const auto place = state->waiters.insert(state->waiters.end(), &waiter);
  const auto wait_start = std::chrono::steady_clock::now();
  const auto deadline = wait_start + queue_.max_wait;
  tenancy::SlotTaken last;
  bool granted = false, client_gone = false;
  while (!closed_ && waiter.state == KeyWaiter::State::waiting) {
    auto slot = co_await shared_->acquire(lease);
    if (!slot) {
      failure = slot.error().message;
      break;
    }
    last = *slot;
    if (slot->answer == tenancy::SlotAnswer::taken) {
      granted = true;
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline || closed_ || waiter.state != KeyWaiter::State::waiting) break;
    waiter.timer.expires_at(std::min(deadline, now + retry));
    auto woken = co_await (waiter.timer.async_wait(net::as_tuple(net::use_awaitable)) ||
                           ctx.exchange.until_client_gone());
    if (woken.index() == 1) {
      client_gone = true;
      break;
    }
  }
  state->waiters.erase(place);
  ctx.waited_for_key = std::chrono::steady_clock::now() - wait_start;
  if (granted) co_return Verdict::next;
  span.fail(client_gone ? "client_closed" : "not_granted");
  ctx.ticket.refund();
  ctx.ticket.release();
  if (!failure.empty()) co_return std::nullopt;
  if (client_gone) {
    ctx.record.client_gone = true;
    co_return Verdict::answered;
  }
  ApiError error;
  if (waiter.state == KeyWaiter::State::revoked) {
    error = ApiError::unauthorized("the API key was revoked");
  } else if (closed_) {
    error = ApiError::unavailable("the gateway is shutting down", "shutting_down");
  } else if (last.answer == tenancy::SlotAnswer::sessions_full) {
    error = sessions_error(key.name, limits.max_sessions.value_or(0), last.seat_frees_in,
                           limits.session_idle, true);
  } else {
    error = concurrency_error(key.name, limits.max_concurrency.value_or(0), queue_.max_wait, true);
  }
  co_await ctx.answer(error);
  co_return Verdict::answered;
}

void Admit::finish(RequestContext& ctx) {
  if (!ctx.ticket) return;
  // Without a usage report, a request that sent nothing to the client used
  // nothing worth counting; one that did keeps its reservation.
  const auto& r = ctx.record;
  if (r.usage)
    ctx.ticket.correct(r.usage->prompt_tokens + r.usage->completion_tokens, now_());
  else if (r.ttfb < 0)
    ctx.ticket.correct(0, now_());
  ctx.ticket.release();
}

void Admit::share_limits(std::shared_ptr<tenancy::SharedLimits> shared, bool local_when_down) {
  shared_ = std::move(shared);
  local_when_down_ = local_when_down;
}

void Admit::wake(const std::string& key) {
  if (auto it = states_.find(key); it != states_.end()) serve_waiters(*it->second);
}

std::string Admit::seat_of(const RequestContext& ctx, const tenancy::KeyLimits& limits) {
  // A session needs a seat only when the key caps sessions; a generation
  // without one is a session of one request.
  if (!limits.max_sessions) return {};
  if (!ctx.session.empty()) return ctx.session;
  if (!ctx.route.endpoint || !generates(*ctx.route.endpoint)) return {};
  return tenancy::one_request_session(++one_request_sessions_);
}

std::shared_ptr<KeyState> Admit::fallback_for(const KeyEntry& key) {
  const auto limits = tenancy::split_limits(key.limits, shared_->gateways());
  auto it = fallback_.find(key.name);
  if (it != fallback_.end()) {
    it->second->set_limits(limits);
    return it->second;
  }
  auto local = std::make_shared<KeyState>(key.name, limits, now_);
  if (const auto& last = state_for(key)->last_shared)
    local->carry_on_from(*last, key.limits, shared_->gateways());
  return fallback_.emplace(key.name, std::move(local)).first->second;
}

void Admit::keys_changed() {
  const auto update = [this](auto& states, bool split) {
    for (auto it = states.begin(); it != states.end();) {
      auto& s = *it->second;
      if (const KeyEntry* key = keys_.by_name(it->first)) {
        s.set_limits(split ? tenancy::split_limits(key->limits, shared_->gateways()) : key->limits);
        serve_waiters(s);
        ++it;
      } else {
        s.revoked = true;
        serve_waiters(s);
        it = states.erase(it);
      }
    }
  };
  update(states_, false);
  update(fallback_, true);
}

void Admit::release_all() {
  closed_ = true;
  for (auto* states : {&states_, &fallback_})
    for (auto& [name, s] : *states)
      for (KeyWaiter* w : s->waiters) w->timer.cancel();
}

std::optional<Admit::KeyLoad> Admit::load(std::string_view key) {
  const auto it = states_.find(key);
  if (it == states_.end()) return std::nullopt;
  auto& s = *it->second;
  return KeyLoad{s.running, s.seats.active(now_()), static_cast<int>(s.waiters.size())};
}

}  // namespace switchyard::gateway
