// Each key's usage since the last UTC midnight, for the console's keys view:
// seeded from the usage ledger at start-up (the rows of earlier runs today)
// and counted from then on as requests end, so reading it never waits on
// SQLite. Used from the I/O thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace switchyard::gateway {

struct DayUsage {
  std::int64_t requests = 0;
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
};

class UsageToday {
 public:
  using Time = std::chrono::system_clock::time_point;

  UsageToday() = default;
  // Today's (UTC) totals by key from the ledger in `state_db`; empty, with
  // an error logged, when it cannot be read.
  static UsageToday from_ledger(const std::string& state_db, Time now);

  // A request of `key` ended (also when it failed: it counts as a request).
  void add(const std::string& key, std::int64_t prompt_tokens, std::int64_t completion_tokens,
           Time now);
  // The key's usage today; zeros when it has none.
  DayUsage of(std::string_view key, Time now) const;
  // Tokens (prompt + completion) by key today: where day budgets start.
  std::map<std::string, std::int64_t, std::less<>> tokens(Time now) const;

 private:
  std::int64_t day_ = -1;  // the UTC day counted, in days since the epoch
  std::map<std::string, DayUsage, std::less<>> by_key_;
};

}  // namespace switchyard::gateway
