#include "tenancy/local_limits.h"

#include <algorithm>

namespace switchyard::tenancy {

using boost::asio::awaitable;

struct LocalLimits::Counters {
  explicit Counters(const KeyLimits& l) : seats(1, l.session_idle) { set(l, true); }
  // New limits; counters of the limits that stay the same carry on.
  void set(const KeyLimits& next, bool fresh = false) {
    if (fresh || next.rpm != limits.rpm)
      rpm = next.rpm ? std::optional(Gcra(*next.rpm, std::chrono::minutes(1))) : std::nullopt;
    if (fresh || next.tpm != limits.tpm)
      tpm = next.tpm ? std::optional(Gcra(*next.tpm, std::chrono::minutes(1))) : std::nullopt;
    if (fresh || next.tokens_per_day != limits.tokens_per_day)
      day = next.tokens_per_day ? std::optional(DayBudget(*next.tokens_per_day)) : std::nullopt;
    seats.set(next.max_sessions.value_or(1), next.session_idle);
    limits = next;
  }
  bool seat_free(const std::string& session, Time now) {
    return session.empty() || seats.seated(session, now) || seats.active(now) < seats.cap();
  }
  bool slot_free() const { return !limits.max_concurrency || running < *limits.max_concurrency; }

  KeyLimits limits;
  std::optional<Gcra> rpm, tpm;
  std::optional<DayBudget> day;
  SessionSeats seats;
  int running = 0;
  int leases = 0;
};

namespace {

RateState rate_state(const std::optional<Gcra>& g, Time now) {
  if (!g) return {};
  return {g->remaining(now), g->reset(now)};
}

}  // namespace

std::uint64_t LocalLimits::open(const std::string& key, const KeyLimits& limits,
                                const std::string& session) {
  auto it = keys_.find(key);
  if (it == keys_.end()) {
    set_limits(key, limits);
    it = keys_.find(key);
  }
  ++it->second->leases;
  std::uint64_t id;
  if (free_.empty()) {
    leases_.emplace_back();
    id = leases_.size();
  } else {
    id = free_.back();
    free_.pop_back();
  }
  Lease& lease = leases_[id - 1];
  lease.counters = it->second;
  lease.session.assign(session);  // the slot's own buffer, where it fits
  return id;
}

void LocalLimits::set_limits(const std::string& key, const KeyLimits& limits) {
  auto it = keys_.find(key);
  if (it == keys_.end()) {
    it = keys_.emplace(key, std::make_shared<Counters>(limits)).first;
    start_budget(key, *it->second);
  } else {
    it->second->set(limits);
  }
}

LocalLimits::Lease* LocalLimits::find(std::uint64_t id) {
  if (id == 0 || id > leases_.size()) return nullptr;
  Lease& lease = leases_[id - 1];
  return lease.counters ? &lease : nullptr;
}

awaitable<Result<RatesTaken>> LocalLimits::take_rates(std::uint64_t id, std::int64_t cost) {
  Lease* found = find(id);
  if (!found) co_return Error{"no such lease"};
  Lease& lease = *found;
  Counters& c = *lease.counters;
  const Time now = now_();
  RatesTaken t;
  using R = RatesTaken::Refused;
  const auto refuse = [&](R which, Duration retry_after) {
    t.refused = which;
    t.retry_after = retry_after;
  };
  if (c.rpm) {
    if (auto p = c.rpm->peek(now, 1); !p.ok) refuse(R::rpm, p.retry_after);
  }
  if (c.tpm && t.refused == R::none) {
    if (auto p = c.tpm->peek(now, cost); !p.ok) refuse(R::tpm, p.retry_after);
  }
  if (c.day && t.refused == R::none) {
    if (auto p = c.day->peek(now, cost); !p.ok) refuse(R::day, p.retry_after);
  }
  if (t.refused == R::none) {
    if (c.rpm) c.rpm->take(now, 1);
    if (c.tpm) c.tpm->take(now, cost);
    if (c.day) c.day->take(now, cost);
    lease.reserved = cost;
    lease.took_request = true;
  }
  t.requests = rate_state(c.rpm, now);
  t.tokens = rate_state(c.tpm, now);
  if (c.day) t.used_today = c.day->used(now);
  co_return t;
}

awaitable<Result<SlotTaken>> LocalLimits::acquire(std::uint64_t id) {
  Lease* found = find(id);
  if (!found) co_return Error{"no such lease"};
  Lease& lease = *found;
  Counters& c = *lease.counters;
  const Time now = now_();
  SlotTaken t;
  if (!c.slot_free()) {
    t.answer = SlotAnswer::concurrency_full;
  } else if (!c.seat_free(lease.session, now)) {
    t.answer = SlotAnswer::sessions_full;
    if (const auto at = c.seats.next_free(now)) t.seat_frees_in = *at - now;
  } else if (!lease.holds_slot) {
    ++c.running;
    if (!lease.session.empty()) c.seats.enter(lease.session, now);
    lease.holds_slot = true;
  }
  co_return t;
}

void LocalLimits::correct(std::uint64_t id, std::int64_t used) {
  Lease* lease = find(id);
  if (!lease) return;
  const std::int64_t delta = used - lease->reserved;
  if (lease->counters->tpm) lease->counters->tpm->adjust(delta);
  if (lease->counters->day) lease->counters->day->adjust(now_(), delta);
  lease->reserved = used;
}

void LocalLimits::refund(std::uint64_t id) {
  Lease* lease = find(id);
  if (!lease || !lease->took_request) return;
  Counters& c = *lease->counters;
  if (c.rpm) c.rpm->adjust(-1);
  if (c.tpm) c.tpm->adjust(-lease->reserved);
  if (c.day) c.day->adjust(now_(), -lease->reserved);
  lease->took_request = false;
  lease->reserved = 0;
}

void LocalLimits::close(std::uint64_t id) {
  Lease* lease = find(id);
  if (!lease) return;
  Counters& c = *lease->counters;
  if (lease->holds_slot) {
    --c.running;
    if (!lease->session.empty()) c.seats.leave(lease->session, now_());
  }
  --c.leases;
  lease->counters.reset();
  lease->session.clear();
  lease->reserved = 0;
  lease->took_request = lease->holds_slot = false;
  free_.push_back(id);
}

void LocalLimits::forget(std::string_view key) {
  if (auto it = keys_.find(key); it != keys_.end()) keys_.erase(it);
}

void LocalLimits::forget_if_idle(std::string_view key) {
  if (auto it = keys_.find(key); it != keys_.end() && it->second->leases == 0) keys_.erase(it);
}

void LocalLimits::start_budgets(std::map<std::string, std::int64_t, std::less<>> spent,
                                Time as_of) {
  spent_before_ = std::move(spent);
  spent_as_of_ = as_of;
  for (auto& [name, counters] : keys_) start_budget(name, *counters);
}

void LocalLimits::start_budget(const std::string& key, Counters& c) {
  auto spent = spent_before_.find(key);
  if (spent == spent_before_.end()) return;
  // Counted on the day it was spent: past midnight it no longer applies.
  if (c.day) c.day->adjust(spent_as_of_, spent->second);
  spent_before_.erase(spent);
}

void LocalLimits::carry_on_from(std::string_view key, const SharedReading& last,
                                const KeyLimits& whole, int gateways) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return;
  Counters& c = *it->second;
  const std::int64_t n = std::max(1, gateways);
  const auto t = now_();
  const auto refilled = [&](std::int64_t remaining, std::int64_t limit) {
    const auto minutes = std::chrono::duration<double, std::ratio<60>>(t - last.at).count();
    return std::min<std::int64_t>(
        limit,
        remaining + static_cast<std::int64_t>(std::max(0.0, minutes) * static_cast<double>(limit)));
  };
  if (c.rpm && whole.rpm)
    c.rpm->start_at(t, refilled(last.rates.requests.remaining, *whole.rpm) / n);
  if (c.tpm && whole.tpm) c.tpm->start_at(t, refilled(last.rates.tokens.remaining, *whole.tpm) / n);
  if (c.day && whole.tokens_per_day && utc_day(last.at) == utc_day(t)) {
    const std::int64_t left =
        std::max<std::int64_t>(0, *whole.tokens_per_day - last.rates.used_today);
    c.day->adjust(t, c.day->limit() - left / n);
  }
}

std::optional<LocalLimits::Load> LocalLimits::load(std::string_view key) {
  auto it = keys_.find(key);
  if (it == keys_.end()) return std::nullopt;
  return Load{it->second->running, it->second->seats.active(now_())};
}

}  // namespace switchyard::tenancy
