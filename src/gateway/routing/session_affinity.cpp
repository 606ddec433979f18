#include "gateway/routing/session_affinity.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "gateway/routing/balance.h"
#include "gateway/routing/block_hash.h"

namespace switchyard::gateway {

RouteDecision SessionAffinity::pick(const RouteQuery& query,
                                    std::span<const Candidate> candidates) {
  const auto blocks = state_.blocks(query);
  // Most requests go home: a home that surely may take the request takes
  // it with no other candidate's prefix matched, which is most of a pick's
  // cost at 256 instances.
  if (const auto home = state_.surely_usable_home(homes_, query, candidates, blocks,
                                                  balance_factor_, /*longest_alone=*/false)) {
    homes_.set(query.session, candidates[home->position].index, query.prompt.size());  // active
    RouteDecision d;
    d.position = home->position;
    d.reason = RouteReason::hit;
    return routed(d, query, candidates, blocks, home->matched);
  }
  state_.match(candidates, blocks, matches_);
  const PrefillCost cost(candidates, balance_factor_, estimated_tokens(query.prompt.size()),
                         matches_);
  const Eligible usable(cost, homes_, query.session);

  RouteDecision d;
  if (query.session.empty()) {
    d.position = homes_.place(candidates, usable, state_.speed(), rotation_, cost.soonest_start());
    d.reason = RouteReason::cold;
  } else {
    d = to_home(query, candidates, cost, usable);
    if (d.wait_until) return d;
  }
  return routed(d, query, candidates, blocks, matches_[d.position]);
}

RouteDecision SessionAffinity::routed(RouteDecision d, const RouteQuery& query,
                                      std::span<const Candidate> candidates,
                                      std::span<const BlockHash> blocks, std::size_t matched) {
  d.home_waited = wait_.end(query.session);
  d.match = share_held(blocks, matched);
  state_.record(candidates[d.position].index, blocks);
  return d;
}

RouteDecision SessionAffinity::to_home(const RouteQuery& query,
                                       std::span<const Candidate> candidates,
                                       const PrefillCost& cost, const Eligible& usable) {
  const auto known = homes_.find(query.session);
  Seat home{known ? position_of(candidates, *known) : kNoCandidate, false, false};
  // A new session, or one whose home is gone, gets the routable instance
  // whose homes weigh least, busy or not: chosen among the free ones, two
  // heavy sessions starting while the light ones filled the other slots
  // shared one instance, and the moved sessions all went to whichever had
  // a slot that moment.
  home.moved = known && home.pos == kNoCandidate;
  home.placed = !known || home.moved;
  // Set once the request is routed: a request that waits first still
  // counts as the session's move when it goes.
  if (home.placed) home.pos = homes_.lightest(candidates, query.session);
  RouteDecision d;
  d.reason = home.moved ? RouteReason::session_moved
             : !known   ? RouteReason::cold
                        : RouteReason::hit;
  if (usable(candidates[home.pos])) {
    d.position = home.pos;
    homes_.set(query.session, candidates[home.pos].index, query.prompt.size());  // active now
  } else {
    away_from_home(d, query, candidates, cost, usable, home);
    if (d.wait_until) return d;
  }
  if (home.moved)
    spdlog::info("routing: session moved from instance #{} (not routable) to {}", *known,
                 *candidates[home.pos].name);
  return d;
}

void SessionAffinity::away_from_home(RouteDecision& d, const RouteQuery& query,
                                     std::span<const Candidate> candidates, const PrefillCost& cost,
                                     const Eligible& usable, Seat home) {
  // The home holds some of the prompt, or none (a new session's).
  const bool holds = matches_[home.pos] > 0;
  const std::size_t bytes = query.prompt.size();
  const long weight = home.placed ? estimated_tokens(bytes) : homes_.weight(query.session);
  const auto soon = usable.beside(candidates[home.pos]);
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
    if (const auto until = wait_for_home(wait_, homes_, cost, candidates[home.pos], query.session,
                                         weight, worth_it, slow_only, rate)) {
      d.wait_until = until;
      return;
    }
  }
  d.position = slow_only ? least_loaded(candidates, cost, usable)
                         : soonest_free(candidates, state_.speed(), rotation_, soon);
  if (!home.placed) d.reason = RouteReason::bounded_out;
  // This request only spills and the home stays, unless the home holds
  // none of its prompt (a new session's): then its context is where it
  // went, and that is its home. A moved session keeps its new home, so
  // that the sessions of a dead instance do not all settle where a slot
  // was free.
  const bool keep = home.moved || holds;
  homes_.set(query.session, candidates[keep ? home.pos : d.position].index, bytes);
}

std::size_t SessionAffinity::least_loaded(std::span<const Candidate> candidates,
                                          const PrefillCost& cost, const Eligible& usable) {
  const std::size_t pos = soonest_free(candidates, state_.speed(), rotation_, usable);
  return pos != kNoCandidate ? pos : cost.soonest_start();
}

}  // namespace switchyard::gateway
