#include "gateway/routing/session_affinity.h"

#include <spdlog/spdlog.h>

#include "gateway/routing/balance.h"

namespace switchyard::gateway {

RouteDecision SessionAffinity::pick(const RouteQuery& query,
                                    std::span<const Candidate> candidates) {
  state_.sync(candidates);
  const LoadBound bound(candidates, balance_factor_);
  const auto under_bound = [&](const Candidate& c) { return bound.admits(c); };
  const auto least_loaded = [&] {
    const std::size_t pos = soonest_free(candidates, state_.speed(), rotation_, under_bound);
    return pos != kNoCandidate ? pos : soonest_free(candidates, state_.speed(), rotation_);
  };

  RouteDecision d;
  const auto known = query.session.empty() ? std::nullopt : homes_.find(query.session);
  std::size_t home_pos = kNoCandidate;
  if (known) {
    for (std::size_t i = 0; i < candidates.size(); ++i)
      if (candidates[i].index == *known) home_pos = i;
  }
  const std::size_t bytes = query.prompt.size();
  if (home_pos != kNoCandidate && bound.admits(candidates[home_pos])) {
    d.position = home_pos;
    d.reason = RouteReason::hit;
    homes_.set(query.session, *known, bytes);  // active now
  } else if (home_pos != kNoCandidate) {
    // A retry has waited its turn already.
    if (query.tried.empty()) {
      const double rate = state_.speed().prefill_rate();
      const double spill = rate > 0 ? static_cast<double>(homes_.weight(query.session)) / rate : 0;
      if (const auto until = wait_.until(query.session, spill)) {
        d.wait_until = until;
        return d;
      }
    }
    d.position = least_loaded();  // the home stays: this request only spills
    d.reason = RouteReason::bounded_out;
    homes_.set(query.session, *known, bytes);
  } else if (known) {
    // The new home is chosen among all routable instances: chosen among the
    // free ones, the moved sessions all went to whichever had a slot then.
    const std::size_t home = homes_.lightest(candidates);
    homes_.set(query.session, candidates[home].index, bytes);
    d.position = bound.admits(candidates[home]) ? home : least_loaded();
    d.reason = RouteReason::session_moved;
    spdlog::info("routing: session moved from instance #{} (not routable) to {}", *known,
                 candidates[home].name);
  } else {
    d.position = homes_.place(candidates, bound, state_.speed(), rotation_);
    d.reason = RouteReason::cold;
    if (!query.session.empty()) homes_.set(query.session, candidates[d.position].index, bytes);
  }
  d.home_waited = wait_.end(query.session);

  const auto blocks = state_.blocks(query);
  const std::size_t index = candidates[d.position].index;
  d.match = blocks.empty() ? 0.0
                           : static_cast<double>(state_.match(index, blocks)) /
                                 static_cast<double>(blocks.size());
  state_.record(index, blocks);
  return d;
}

}  // namespace switchyard::gateway
