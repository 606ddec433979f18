#include "gateway/routing/home_wait.h"

#include <algorithm>

namespace switchyard::gateway {

namespace {
// Waits remembered at most; more sweeps out the ones long past.
constexpr std::size_t kMaxWaiting = 4096;
}  // namespace

bool HomeWait::outlasts_wait(double spill_prefill_seconds) const {
  return spill_prefill_seconds > std::chrono::duration<double>(limit_).count();
}

std::optional<HomeWait::Clock::time_point> HomeWait::until(
    std::string_view session, bool worth_it, std::chrono::duration<double> as_long_as) {
  if (limit_.count() <= 0 || session.empty() || !worth_it) return std::nullopt;
  const auto bound =
      std::max<Clock::duration>(limit_, std::chrono::duration_cast<Clock::duration>(as_long_as));
  const auto now = now_();
  auto it = since_.find(std::string(session));
  // A wait long past its bound belonged to a request that ended otherwise
  // (its client left): this one waits afresh.
  if (it == since_.end() || now - it->second > 2 * bound) {
    if (since_.size() >= kMaxWaiting)
      std::erase_if(since_, [&](const auto& w) { return now - w.second > 2 * bound; });
    it = since_.insert_or_assign(std::string(session), now).first;
  }
  // Past the bound the entry stays until end(), which says how long it was.
  if (now < it->second + bound) return it->second + bound;
  return std::nullopt;
}

std::optional<double> HomeWait::end(std::string_view session) {
  const auto it = since_.find(std::string(session));
  if (it == since_.end()) return std::nullopt;
  const double waited = std::chrono::duration<double>(now_() - it->second).count();
  since_.erase(it);
  return waited;
}

std::optional<HomeWait::Clock::time_point> wait_for_home(
    HomeWait& wait, Homes& homes, const PrefillCost& cost, const Candidate& home,
    std::string_view session, long weight, bool worth_it, bool slow_only, double rate) {
  // Holding up the home's requests would delay each of them by this one's
  // whole prefill: it may wait as long for them to end. What it may wait is
  // worked out only when every free slot elsewhere is slow (a pass over the
  // candidates for the soonest free one's delay).
  const bool holds_up = cost.holds_up(home);
  const auto as_long_as =
      slow_only
          ? prefill_seconds(std::max(cost.free_delay(), holds_up ? cost.uncached(home) : 0L), rate)
          : std::chrono::duration<double>::zero();
  const auto until = wait.until(session, worth_it, as_long_as);
  if (until && holds_up) homes.reserve(session, home.index, weight, *until);
  return until;
}

void end_home_wait(HomeWait& wait, Homes& homes, std::string_view session) {
  homes.unreserve(session);
  wait.end(session);
}

}  // namespace switchyard::gateway
