#include "tenancy/limits.h"

#include <algorithm>
#include <cmath>

namespace switchyard::tenancy {

Gcra::Gcra(std::int64_t limit, Duration period)
    : limit_(limit),
      period_(period),
      interval_(static_cast<double>(period.count()) / static_cast<double>(limit)) {}

Gcra::Taken Gcra::peek(Time now, std::int64_t cost) const {
  const Time base = std::max(tat_, now);
  const Time next = base + Duration(std::llround(interval_ * static_cast<double>(cost)));
  const Duration ahead = next - now;
  if (ahead <= period_) return {true, Duration::zero()};
  return {false, ahead - period_};
}

Gcra::Taken Gcra::take(Time now, std::int64_t cost) {
  const Taken t = peek(now, cost);
  if (t.ok)
    tat_ = std::max(tat_, now) + Duration(std::llround(interval_ * static_cast<double>(cost)));
  return t;
}

void Gcra::adjust(std::int64_t delta) {
  tat_ += Duration(std::llround(interval_ * static_cast<double>(delta)));
}

void Gcra::start_at(Time now, std::int64_t remaining) {
  tat_ = now;
  adjust(limit_ - std::clamp<std::int64_t>(remaining, 0, limit_));
}

std::int64_t Gcra::remaining(Time now) const {
  const Duration used = std::max(tat_, now) - now;
  const double left = static_cast<double>((period_ - used).count()) / interval_;
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::floor(left + 1e-9)), 0, limit_);
}

Duration Gcra::reset(Time now) const {
  return std::max(tat_, now) - now;
}

std::int64_t utc_day(Time t) {
  return std::chrono::floor<std::chrono::days>(t).time_since_epoch().count();
}

std::int64_t DayBudget::used(Time now) const {
  return utc_day(now) == day_ ? used_ : 0;
}

Gcra::Taken DayBudget::peek(Time now, std::int64_t cost) const {
  // As a difference: a cost near 2^63 must not wrap around to one that fits.
  if (cost <= limit_ - used(now)) return {true, Duration::zero()};
  const auto midnight = std::chrono::floor<std::chrono::days>(now) + std::chrono::days(1);
  return {false, midnight - now};
}

Gcra::Taken DayBudget::take(Time now, std::int64_t cost) {
  const Gcra::Taken t = peek(now, cost);
  if (t.ok) adjust(now, cost);
  return t;
}

void DayBudget::adjust(Time now, std::int64_t delta) {
  if (utc_day(now) != day_) {
    day_ = utc_day(now);
    used_ = 0;
  }
  used_ = std::max<std::int64_t>(0, used_ + delta);
}

void SessionSeats::expire(Time now) {
  std::erase_if(seats_, [&](const auto& kv) {
    return kv.second.running == 0 && kv.second.last_end + idle_ <= now;
  });
}

bool SessionSeats::enter(const std::string& session, Time now) {
  expire(now);
  auto it = seats_.find(session);
  if (it == seats_.end()) {
    if (static_cast<int>(seats_.size()) >= cap_) return false;
    it = seats_.emplace(session, Seat{}).first;
  }
  ++it->second.running;
  return true;
}

bool SessionSeats::seated(const std::string& session, Time now) {
  expire(now);
  return seats_.contains(session);
}

void SessionSeats::leave(const std::string& session, Time now) {
  auto it = seats_.find(session);
  if (it == seats_.end()) return;
  it->second.running = std::max(0, it->second.running - 1);
  it->second.last_end = now;
  if (it->second.running == 0 && is_one_request_session(session)) seats_.erase(it);
}

std::string one_request_session(std::uint64_t n) {
  return "\x01request-" + std::to_string(n);
}

bool is_one_request_session(std::string_view session) {
  return !session.empty() && session.front() == '\x01';
}

std::optional<Time> SessionSeats::next_free(Time now) {
  expire(now);
  std::optional<Time> first;
  for (const auto& [name, seat] : seats_) {
    if (seat.running > 0) continue;
    const Time frees = seat.last_end + idle_;
    if (!first || frees < *first) first = frees;
  }
  return first;
}

int SessionSeats::active(Time now) {
  expire(now);
  return static_cast<int>(seats_.size());
}

}  // namespace switchyard::tenancy
