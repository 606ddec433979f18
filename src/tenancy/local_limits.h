// A key's limits counted by this gateway alone (a Limiter): GCRA rates, the
// UTC-day budget, the requests running and the session seats, on a clock
// passed in (unit tests use a fake one). The limits of keys not shared
// through Redis, and with `redis_down: local` each key's share of its
// limits while Redis is unreachable.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tenancy/limiter.h"

namespace switchyard::tenancy {

class LocalLimits final : public Limiter {
 public:
  explicit LocalLimits(WallClock now = &system_now) : now_(std::move(now)) {}

  // Limiter: every answer at once, never an error. open() counts a key new
  // to it under `limits`; a known key's limits change by set_limits.
  std::uint64_t open(const std::string& key, const KeyLimits& limits,
                     const std::string& session) override;
  boost::asio::awaitable<Result<RatesTaken>> take_rates(std::uint64_t lease,
                                                        std::int64_t cost) override;
  boost::asio::awaitable<Result<SlotTaken>> acquire(std::uint64_t lease) override;
  void correct(std::uint64_t lease, std::int64_t used) override;
  void refund(std::uint64_t lease) override;
  void close(std::uint64_t lease) override;

  // The key's limits from now on: the counters of limits that stay the
  // same carry on.
  void set_limits(const std::string& key, const KeyLimits& limits);
  bool counts(std::string_view key) const { return keys_.contains(key); }
  // The key's counters dropped; its open leases give back nothing.
  void forget(std::string_view key);
  // The key's counters dropped when no lease holds them.
  void forget_if_idle(std::string_view key);
  // Budget start: the tokens each key used on the UTC day of `as_of` before
  // this gateway started; a key's tokens per day start from them.
  void start_budgets(std::map<std::string, std::int64_t, std::less<>> spent, Time as_of);

  // What Redis's counters said at a key's last request, and when.
  struct SharedReading {
    RatesTaken rates;
    Time at;
  };
  // redis_down: local. The key's counters (set to `whole` ÷ `gateways`)
  // start from this gateway's share of what Redis last said was left,
  // refilled since: starting full, every gateway would add its whole share.
  void carry_on_from(std::string_view key, const SharedReading& last, const KeyLimits& whole,
                     int gateways);

  struct Load {
    int running = 0;   // requests holding a slot
    int sessions = 0;  // sessions seated (kept only with max_sessions)
  };
  // Not const: idle seats are let go as they are counted.
  std::optional<Load> load(std::string_view key);

 private:
  struct Counters;
  struct Lease {
    std::shared_ptr<Counters> counters;  // null: the place is free
    std::string session;                 // empty: no seat needed
    std::int64_t reserved = 0;           // tokens take_rates took
    bool took_request = false;
    bool holds_slot = false;
  };
  Lease* find(std::uint64_t id);  // null: no such lease
  void start_budget(const std::string& key, Counters& c);

  WallClock now_;
  std::map<std::string, std::shared_ptr<Counters>, std::less<>> keys_;
  // By id - 1; a closed lease's place is reused (no allocation per request).
  std::vector<Lease> leases_;
  std::vector<std::uint64_t> free_;
  // start_budgets(): applied to a key's counters when they are made.
  std::map<std::string, std::int64_t, std::less<>> spent_before_;
  Time spent_as_of_{};
};

}  // namespace switchyard::tenancy
