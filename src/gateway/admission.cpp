#include "gateway/admission.h"

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "openai/json_scan.h"
#include "openai/request_estimate.h"

namespace switchyard::gateway {

namespace net = boost::asio;
using net::awaitable;
using namespace net::experimental::awaitable_operators;
using openai::ApiError;
using tenancy::Clock;
using tenancy::Duration;

struct KeyWaiter {
  explicit KeyWaiter(net::any_io_executor ex) : timer(ex) {}
  // Expires at the wait's bound, a seat's idle-out or the next poll of
  // Redis; cancelled to wake.
  net::steady_timer timer;
  bool turn = false;  // the lane's pass has come to it: it hands the pass on
};

// How a wait for a slot ended.
struct Admit::SlotWait {
  bool granted = false;
  bool client_gone = false;
  std::string failure;  // the limiter failed
  bool shared = false;  // the limits are Redis's, across the gateways
  tenancy::SlotTaken last{tenancy::SlotAnswer::concurrency_full, std::nullopt};
};

namespace {

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

void add_rate_headers(RequestContext& ctx, const tenancy::KeyLimits& l,
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

// The 429 of the rate that refused.
ApiError rate_error(const std::string& name, const tenancy::KeyLimits& l,
                    const tenancy::RatesTaken& t, std::int64_t cost) {
  using R = tenancy::RatesTaken::Refused;
  if (t.refused == R::rpm) return rpm_error(name, l.rpm.value_or(0), t.retry_after);
  if (t.refused == R::tpm) return tpm_error(name, l.tpm.value_or(0), cost, t.retry_after);
  return budget_error(name, t.used_today, l.tokens_per_day.value_or(0), cost, t.retry_after);
}

bool generates(openai::Endpoint e) {
  using E = openai::Endpoint;
  return e == E::chat_completions || e == E::completions || e == E::native_completion ||
         e == E::infill || e == E::messages;
}

// Hands the lane's pass to the first waiter from `from` on; past the last,
// the pass ends (and starts again when something freed meanwhile).
void pass_from(KeyLane& lane, std::list<KeyWaiter*>::iterator from) {
  if (from != lane.waiters.end()) {
    (*from)->turn = true;
    (*from)->timer.cancel();
    return;
  }
  lane.passing = false;
  if (std::exchange(lane.again, false)) wake(lane);
}

}  // namespace

void wake(KeyLane& lane) {
  if (lane.revoked) {
    for (KeyWaiter* w : lane.waiters) w->timer.cancel();
    return;
  }
  if (lane.passing) {
    lane.again = true;
    return;
  }
  if (lane.waiters.empty()) return;
  lane.passing = true;
  pass_from(lane, lane.waiters.begin());
}

KeyTicket& KeyTicket::operator=(KeyTicket&& o) noexcept {
  if (this != &o) {
    release();
    limiter_ = std::move(o.limiter_);
    lease_ = std::exchange(o.lease_, 0);
    lane_ = std::move(o.lane_);
  }
  return *this;
}

void KeyTicket::correct(std::int64_t used) {
  if (auto limiter = limiter_.lock(); limiter && lease_) limiter->correct(lease_, used);
}

void KeyTicket::refund() {
  if (auto limiter = limiter_.lock(); limiter && lease_) limiter->refund(lease_);
}

void KeyTicket::release() {
  const auto lease = std::exchange(lease_, 0);
  const auto limiter = limiter_.lock();
  limiter_.reset();
  const auto lane = lane_.lock();
  lane_.reset();
  if (!lease || !limiter) return;
  limiter->close(lease);
  if (lane) wake(*lane);
}

std::int64_t reserved_tokens(const RequestContext& ctx) {
  const bool generating = ctx.route.endpoint && generates(*ctx.route.endpoint);
  const auto e = openai::estimate_tokens(ctx.facts, 1024);
  const std::int64_t output = generating ? e.output : 0;
  // Saturated: a max_tokens near 2^63 must not wrap around to a cost that fits.
  constexpr auto kMost = std::numeric_limits<std::int64_t>::max();
  return std::max<std::int64_t>(1, output > kMost - e.prompt ? kMost : e.prompt + output);
}

std::string reset_text(Duration d) {
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(d).count();
  if (ms < 1000) return fmt::format("{}ms", ms);
  const auto s = (ms + 999) / 1000;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{}s", s / 60, s % 60);
  return fmt::format("{}h{}m{}s", s / 3600, s % 3600 / 60, s % 60);
}

Stage::Decision Authenticate::check(RequestContext& ctx) {
  if (!keys_.enabled()) return {};
  const auto& head = ctx.request.head;
  const KeyEntry* key = keys_.by_note(head.screen_note);
  if (!key) key = keys_.find(head.headers);  // the table changed since the head
  if (key) {
    ctx.key_name = key->name;
    return {};
  }
  // Fails closed: a key may be among the records still to come from Redis.
  const ApiError error =
      keys_.pending()
          ? ApiError::unavailable("the API keys shared through redis have not been read yet",
                                  "keys_unavailable")
          : ApiError::unauthorized("the API key is not valid");
  return Decision::answer(error);
}

Admit::Admit(net::any_io_executor executor, const bool& draining, const ApiKeys& keys,
             const config::QueueOptions& queue, tenancy::WallClock now)
    : executor_(executor),
      now_(std::move(now)),
      draining_(draining),
      keys_(keys),
      queue_(queue),
      local_(std::make_shared<tenancy::LocalLimits>(now_)),
      fallback_(std::make_shared<tenancy::LocalLimits>(now_)) {}

void Admit::start_budgets(std::map<std::string, std::int64_t, std::less<>> spent,
                          tenancy::Time as_of) {
  local_->start_budgets(std::move(spent), as_of);
}

std::shared_ptr<KeyLane> Admit::lane_of(const std::string& key) {
  auto it = lanes_.find(key);
  if (it == lanes_.end()) it = lanes_.emplace(key, std::make_shared<KeyLane>()).first;
  return it->second;
}

Stage::Decision Admit::check(RequestContext& ctx) {
  if (!draining_ && ctx.key_name.empty()) return {};
  return {this, std::nullopt};
}

awaitable<Verdict> Admit::run(RequestContext& ctx) {
  if (draining_) {
    // Requests already in flight or queued finish; new ones go elsewhere.
    const ApiError error = ApiError::unavailable("the gateway is shutting down", "shutting_down");
    co_await ctx.answer(error, /*close=*/true);
    co_return Verdict::answered;
  }
  // Held while the request waits: the key table may be swapped meanwhile.
  const auto table = keys_.table();
  const KeyEntry* key = table->by_name(ctx.key_name);
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
  const KeyEntry& entry = *key;
  const std::int64_t cost = reserved_tokens(ctx);
  ctx.share = QueueShare{entry.limits.priority, entry.limits.weight, cost};
  std::string failure;
  std::optional<Verdict> verdict;
  if (shared_ && tenancy::needs_shared_state(entry.limits)) {
    if (!shared_->up()) failure = shared_->client().last_error();
    if (failure.empty())
      verdict = co_await limit(ctx, entry.name, entry.limits, shared_, cost, failure);
    if (!verdict && !local_when_down_) {
      ApiError error = ApiError::unavailable(shared_->down_message(failure), "limits_unavailable");
      error.retry_after = 1;
      co_await ctx.answer(error);
      co_return Verdict::answered;
    }
    if (!verdict) {
      failure.clear();
      verdict = co_await limit(ctx, entry.name, fallback_limits(entry), fallback_, cost, failure);
    }
  } else {
    verdict = co_await limit(ctx, entry.name, entry.limits, local_, cost, failure);
  }
  // This gateway's own counters never fail.
  co_return verdict.value_or(Verdict::answered);
}

awaitable<std::optional<Verdict>> Admit::limit(RequestContext& ctx, const std::string& name,
                                               const tenancy::KeyLimits& limits,
                                               std::shared_ptr<tenancy::Limiter> limiter,
                                               std::int64_t cost, std::string& failure) {
  if (limits.tpm && cost > *limits.tpm) {
    co_await ctx.answer(tokens_over_tpm(name, cost, *limits.tpm));
    co_return Verdict::answered;
  }
  const auto lane = lane_of(name);
  const std::uint64_t lease = limiter->open(name, limits, seat_of(ctx, limits));
  ctx.ticket = KeyTicket(limiter, lease, lane);
  auto taken = co_await limiter->take_rates(lease, cost);
  if (!taken) {
    failure = taken.error().message;
    ctx.ticket.release();
    co_return std::nullopt;
  }
  add_rate_headers(ctx, limits, *taken);
  if (limiter == shared_) {
    lane->last_shared = tenancy::LocalLimits::SharedReading{*taken, now_()};
    fallback_->forget_if_idle(name);  // Redis answers again: an outage's counters are done with
  }
  if (taken->refused != tenancy::RatesTaken::Refused::none) {
    ctx.ticket.release();
    co_await ctx.answer(rate_error(name, limits, *taken, cost));
    co_return Verdict::answered;
  }
  // In a pass a newcomer waits its turn: the slot freed is an earlier waiter's.
  std::optional<tenancy::SlotTaken> first;
  if (!lane->passing) {
    auto slot = co_await limiter->acquire(lease);
    if (slot && slot->answer == tenancy::SlotAnswer::taken) co_return Verdict::next;
    if (slot)
      first = *slot;
    else
      failure = slot.error().message;
  }
  SlotWait wait;
  if (failure.empty()) wait = co_await wait_for_slot(ctx, *limiter, lease, lane, first);
  if (wait.granted) co_return Verdict::next;
  ctx.ticket.refund();
  ctx.ticket.release();
  if (failure.empty()) failure = wait.failure;
  if (!failure.empty()) co_return std::nullopt;
  co_return co_await refuse_slot(ctx, name, limits, wait, *lane);
}

awaitable<Admit::SlotWait> Admit::wait_for_slot(RequestContext& ctx, tenancy::Limiter& limiter,
                                                std::uint64_t lease, std::shared_ptr<KeyLane> lane,
                                                std::optional<tenancy::SlotTaken> first) {
  obs::ScopedSpan span(ctx.trace, "switchyard.key_wait");
  span.set("switchyard.key", ctx.key_name);
  // Redis's waiters also ask again every redis_poll, for a release message lost.
  const std::optional<std::chrono::milliseconds> poll =
      &limiter == shared_.get() ? std::optional(shared_->poll()) : std::nullopt;
  SlotWait out;
  out.shared = poll.has_value();
  if (out.shared) span.set("switchyard.limits", std::string("shared"));
  KeyWaiter waiter(executor_);
  const auto place = lane->waiters.insert(lane->waiters.end(), &waiter);
  const auto wait_start = std::chrono::steady_clock::now();
  const auto deadline = wait_start + queue_.max_wait;
  if (first) out.last = *first;
  for (bool ask = false;; ask = true) {
    if (ask) {
      auto slot = co_await limiter.acquire(lease);
      if (!slot) {
        out.failure = slot.error().message;
        break;
      }
      out.last = *slot;
      if (slot->answer == tenancy::SlotAnswer::taken) {
        out.granted = true;
        break;
      }
    }
    if (std::exchange(waiter.turn, false)) pass_from(*lane, std::next(place));
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline || closed_ || lane->revoked) break;
    auto wake_at = deadline;
    if (out.last.seat_frees_in)  // an idle seat frees then
      wake_at = std::min(
          wake_at, now + std::chrono::ceil<std::chrono::milliseconds>(*out.last.seat_frees_in));
    if (poll) wake_at = std::min(wake_at, now + *poll);
    waiter.timer.expires_at(wake_at);
    auto woken = co_await (waiter.timer.async_wait(net::as_tuple(net::use_awaitable)) ||
                           ctx.exchange.until_client_gone());
    if (woken.index() == 1) {
      out.client_gone = true;
      break;
    }
    if (closed_ || lane->revoked) break;
  }
  if (waiter.turn) pass_from(*lane, std::next(place));
  lane->waiters.erase(place);
  ctx.waited_for_key = std::chrono::steady_clock::now() - wait_start;
  if (!out.granted) span.fail(out.client_gone ? "client_closed" : "not_granted");
  co_return out;
}

awaitable<Verdict> Admit::refuse_slot(RequestContext& ctx, const std::string& name,
                                      const tenancy::KeyLimits& limits, const SlotWait& wait,
                                      const KeyLane& lane) {
  if (wait.client_gone) {
    ctx.record.client_gone = true;
    co_return Verdict::answered;
  }
  ApiError error;
  if (lane.revoked) {
    error = ApiError::unauthorized("the API key was revoked");
  } else if (closed_) {
    error = ApiError::unavailable("the gateway is shutting down", "shutting_down");
  } else if (wait.last.answer == tenancy::SlotAnswer::sessions_full) {
    error = sessions_error(name, limits.max_sessions.value_or(0), wait.last.seat_frees_in,
                           limits.session_idle, wait.shared);
  } else {
    error =
        concurrency_error(name, limits.max_concurrency.value_or(0), queue_.max_wait, wait.shared);
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
    ctx.ticket.correct(r.usage->prompt_tokens + r.usage->completion_tokens);
  else if (r.ttfb < 0)
    ctx.ticket.correct(0);
  ctx.ticket.release();
}

void Admit::share_limits(std::shared_ptr<tenancy::SharedLimits> shared, bool local_when_down) {
  shared_ = std::move(shared);
  local_when_down_ = local_when_down;
}

void Admit::wake(const std::string& key) {
  if (auto it = lanes_.find(key); it != lanes_.end()) gateway::wake(*it->second);
}

std::string Admit::seat_of(const RequestContext& ctx, const tenancy::KeyLimits& limits) {
  // A session needs a seat only when the key caps sessions; a generation
  // without one is a session of one request.
  if (!limits.max_sessions) return {};
  if (!ctx.session.empty()) return ctx.session;
  if (!ctx.route.endpoint || !generates(*ctx.route.endpoint)) return {};
  return tenancy::one_request_session(++one_request_sessions_);
}

tenancy::KeyLimits Admit::fallback_limits(const KeyEntry& key) {
  // Split by the gateways seen now: their count may change during an outage.
  const auto split = tenancy::split_limits(key.limits, shared_->gateways());
  const bool fresh = !fallback_->counts(key.name);
  fallback_->set_limits(key.name, split);
  if (const auto& last = lane_of(key.name)->last_shared; fresh && last)
    fallback_->carry_on_from(key.name, *last, key.limits, shared_->gateways());
  return split;
}

void Admit::keys_changed() {
  for (auto it = lanes_.begin(); it != lanes_.end();) {
    const std::string& name = it->first;
    KeyLane& lane = *it->second;
    if (const KeyEntry* key = keys_.by_name(name)) {
      if (local_->counts(name)) local_->set_limits(name, key->limits);
      if (shared_ && fallback_->counts(name))
        fallback_->set_limits(name, tenancy::split_limits(key->limits, shared_->gateways()));
      gateway::wake(lane);
      ++it;
    } else {
      lane.revoked = true;
      gateway::wake(lane);
      local_->forget(name);
      fallback_->forget(name);
      it = lanes_.erase(it);
    }
  }
}

void Admit::release_all() {
  closed_ = true;
  for (auto& [name, lane] : lanes_)
    for (KeyWaiter* w : lane->waiters) w->timer.cancel();
}

std::optional<Admit::KeyLoad> Admit::load(std::string_view key) {
  const auto lane = lanes_.find(key);
  const auto local = local_->load(key);
  if (lane == lanes_.end() && !local) return std::nullopt;
  KeyLoad out;
  if (local) {
    out.running = local->running;
    out.sessions = local->sessions;
  }
  if (lane != lanes_.end()) out.waiting = static_cast<int>(lane->second->waiters.size());
  return out;
}

}  // namespace switchyard::gateway
