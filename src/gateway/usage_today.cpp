#include "gateway/usage_today.h"

#include <spdlog/spdlog.h>

#include "tenancy/limits.h"
#include "tenancy/usage_report.h"

namespace switchyard::gateway {

namespace {

constexpr std::int64_t kDayMs = 24 * 60 * 60 * 1000;

}  // namespace

UsageToday UsageToday::from_ledger(const std::string& state_db, Time now) {
  UsageToday today;
  today.day_ = tenancy::utc_day(now);
  auto db = tenancy::Database::open(state_db, /*read_only=*/true);
  if (!db) {
    spdlog::error("keys: today's usage not read from {}: {}", state_db, db.error().message);
    return today;
  }
  auto totals = tenancy::usage_totals(*db, today.day_ * kDayMs, tenancy::GroupBy::key);
  if (!totals) {
    spdlog::error("keys: today's usage not read from {}: {}", state_db, totals.error().message);
    return today;
  }
  for (const auto& t : *totals)
    today.by_key_[t.group] = DayUsage{t.requests, t.prompt_tokens, t.completion_tokens};
  return today;
}

void UsageToday::add(const std::string& key, std::int64_t prompt_tokens,
                     std::int64_t completion_tokens, Time now) {
  if (const auto day = tenancy::utc_day(now); day != day_) {
    by_key_.clear();
    day_ = day;
  }
  auto& u = by_key_[key];
  ++u.requests;
  u.prompt_tokens += prompt_tokens;
  u.completion_tokens += completion_tokens;
}

DayUsage UsageToday::of(std::string_view key, Time now) const {
  if (tenancy::utc_day(now) != day_) return {};
  const auto it = by_key_.find(key);
  return it == by_key_.end() ? DayUsage{} : it->second;
}

std::map<std::string, std::int64_t, std::less<>> UsageToday::tokens(Time now) const {
  std::map<std::string, std::int64_t, std::less<>> out;
  if (tenancy::utc_day(now) != day_) return out;
  for (const auto& [key, u] : by_key_)
    if (!key.empty()) out[key] = u.prompt_tokens + u.completion_tokens;
  return out;
}

}  // namespace switchyard::gateway
