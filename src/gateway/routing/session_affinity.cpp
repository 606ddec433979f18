#include "gateway/routing/session_affinity.h"

#include <spdlog/spdlog.h>

#include "gateway/routing/balance.h"
#include "gateway/routing/block_hash.h"

namespace switchyard::gateway {

RouteDecision SessionAffinity::pick(const RouteQuery& query,
                                    std::span<const Candidate> candidates) {
  state_.sync(candidates);
  const LoadBound bound(candidates, balance_factor_);
  const std::size_t bytes = query.prompt.size();
  const auto blocks = state_.blocks(query);
  matches_.clear();
  for (const auto& c : candidates) matches_.push_back(state_.match(c.index, blocks));
  const PrefillCost cost(candidates, bound, estimated_tokens(bytes), matches_);
  const auto usable = [&](const Candidate& c) {
    return cost.usable(c) && !homes_.reserved_for_other(c.index, query.session);
  };
  const auto least_loaded = [&] {
    const std::size_t pos = soonest_free(candidates, state_.speed(), rotation_, usable);
    return pos != kNoCandidate ? pos : cost.soonest_start();
  };

  RouteDecision d;
  if (query.session.empty()) {
    d.position = homes_.place(candidates, usable, state_.speed(), rotation_, cost.soonest_start());
    d.reason = RouteReason::cold;
  } else {
    const auto known = homes_.find(query.session);
    std::size_t home_pos = kNoCandidate;
    for (std::size_t i = 0; known && i < candidates.size(); ++i)
      if (candidates[i].index == *known) home_pos = i;
    // A new session, or one whose home is gone, gets the routable instance
    // whose homes weigh least, busy or not: chosen among the free ones, two
    // heavy sessions starting while the light ones filled the other slots
    // shared one instance, and the moved sessions all went to whichever had
    // a slot that moment.
    const bool moved = known && home_pos == kNoCandidate;
    const bool placed = !known || moved;
    // Set once the request is routed: a request that waits first still
    // counts as the session's move when it goes.
    if (placed) home_pos = homes_.lightest(candidates, query.session);
    d.reason = moved ? RouteReason::session_moved : !known ? RouteReason::cold : RouteReason::hit;
    const Candidate& home = candidates[home_pos];
    if (usable(home)) {
      d.position = home_pos;
      homes_.set(query.session, home.index, bytes);  // active now
    } else {
      // The home holds some of the prompt, or none (a new session's).
      const bool holds = matches_[home_pos] > 0;
      const long weight = placed ? estimated_tokens(bytes) : homes_.weight(query.session);
      const auto soon = [&](const Candidate& c) {
        return usable(c) && cost.no_later_than(c, home);
      };
      const bool slow_only = !any_free(candidates, soon);
      // A retry has waited its turn already.
      if (query.tried.empty()) {
        // Waiting pays when the prefill it saves outlasts it, or, for a new
        // home, when the session would unbalance the fleet where it spills;
        // and when every free slot elsewhere is behind a longer prefill.
        const double rate = state_.speed().prefill_rate();
        const bool worth_it =
            slow_only || (holds ? wait_.outlasts_wait(prefill_seconds(weight, rate).count())
                                : homes_.outweighs_mean(candidates, query.session, weight));
        if (const auto until = wait_for_home(wait_, homes_, cost, home, query.session, weight,
                                             worth_it, slow_only, rate)) {
          d.wait_until = until;
          return d;
        }
      }
      d.position =
          slow_only ? least_loaded() : soonest_free(candidates, state_.speed(), rotation_, soon);
      if (!placed) d.reason = RouteReason::bounded_out;
      // This request only spills and the home stays, unless the home holds
      // none of its prompt (a new session's): then its context is where it
      // went, and that is its home. A moved session keeps its new home, so
      // that the sessions of a dead instance do not all settle where a
      // slot was free.
      const bool keep = moved || holds;
      homes_.set(query.session, candidates[keep ? home_pos : d.position].index, bytes);
    }
    if (moved)
      spdlog::info("routing: session moved from instance #{} (not routable) to {}", *known,
                   candidates[home_pos].name);
  }
  d.home_waited = wait_.end(query.session);

  const std::size_t index = candidates[d.position].index;
  d.match = blocks.empty()
                ? 0.0
                : static_cast<double>(matches_[d.position]) / static_cast<double>(blocks.size());
  state_.record(index, blocks);
  return d;
}

}  // namespace switchyard::gateway
