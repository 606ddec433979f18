// routing.home_wait: a request whose home (the instance holding its
// session's prompt) is busy or at the load bound may wait for it, up to a
// bound, instead of spilling to an instance that holds none of its prompt:
// only when the prefill it would redo there is estimated to take longer
// than the longest wait, so that waiting never costs more than it saves.
// A new session's first turn may wait likewise for the home it was given
// (homes.h), when spilling would unbalance the fleet.
// The wait queue hands the home's next free slot to the waiter whose home
// it is (RoutingPolicy::match); past the bound, the request spills.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "gateway/routing/balance.h"
#include "gateway/routing/homes.h"

namespace switchyard::gateway {

class HomeWait {
 public:
  using Clock = std::chrono::steady_clock;

  // `limit` 0 never waits.
  explicit HomeWait(std::chrono::milliseconds limit,
                    std::function<Clock::time_point()> now = &Clock::now)
      : limit_(limit), now_(std::move(now)) {}

  // Whether a prefill of `spill_prefill_seconds` (estimated; <= 0: unknown)
  // redone elsewhere would take longer than the longest wait.
  bool outlasts_wait(double spill_prefill_seconds) const;
  // Until when the request of `session`, whose home cannot take it now,
  // should wait for its home; nullopt: spill now (also when the wait is not
  // `worth_it`, with no home_wait, or without a session). A session's wait
  // starts at its first such request and ends at the bound, however often
  // it is asked again. The bound is home_wait, or `as_long_as` when that
  // is longer: how much later than its home the request would start on the
  // only free slots (behind a long prefill), so that it waits no longer
  // than it would there.
  std::optional<Clock::time_point> until(std::string_view session, bool worth_it,
                                         std::chrono::duration<double> as_long_as = {});
  // The session's request was routed: a later one waits afresh. Returns how
  // long this one waited, in seconds (nullopt: it did not).
  std::optional<double> end(std::string_view session);

 private:
  const std::chrono::milliseconds limit_;
  std::function<Clock::time_point()> now_;
  std::unordered_map<std::string, Clock::time_point> since_;  // waiting sessions: since when
};

// Which candidates may take a request of `session` now, as the affinity
// policies weigh them: usable by the prefill cost (PrefillCost::usable) and
// not reserved for another session's home (Homes::reserve).
class Eligible {
 public:
  // The references must outlive this.
  Eligible(const PrefillCost& cost, const Homes& homes, std::string_view session)
      : cost_(cost), homes_(homes), session_(session) {}
  bool operator()(const Candidate& c) const {
    return cost_.usable(c) && !homes_.reserved_for_other(c.index, session_);
  }
  // Those of them that would start it about as soon as `home` would: where
  // a request may go instead of waiting for its home.
  auto beside(const Candidate& home) const {
    return [this, latest = cost_.latest_beside(home)](const Candidate& c) {
      return cost_.usable_by(c, latest) && !homes_.reserved_for_other(c.index, session_);
    };
  }

 private:
  const PrefillCost& cost_;
  const Homes& homes_;
  std::string_view session_;
};

// The affinity policies' wait for a `home` that cannot take the request of
// `session` (weighing `weight` tokens) now: until when it waits, or nullopt
// to spill now (HomeWait::until, with `worth_it`). When every free slot
// elsewhere is behind a longer prefill (`slow_only`), it may wait as long
// as that delay, or as long as its own prefill would hold up the requests
// the home runs (PrefillCost::holds_up); in that case the home is reserved
// for it (Homes::reserve) so that it empties. `rate`: the measured prefill
// rate (Throughput::prefill_rate).
std::optional<HomeWait::Clock::time_point> wait_for_home(
    HomeWait& wait, Homes& homes, const PrefillCost& cost, const Candidate& home,
    std::string_view session, long weight, bool worth_it, bool slow_only, double rate);

// What wait_for_home() kept for `session` when its request stops waiting
// without being routed (RoutingPolicy::left): the reserved instance, and the
// start of its wait, so that the session's next request waits afresh.
void end_home_wait(HomeWait& wait, Homes& homes, std::string_view session);

}  // namespace switchyard::gateway
