#include "gateway/routing/prefix_affinity.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "gateway/routing/balance.h"

namespace switchyard::gateway {

RouteDecision PrefixAffinity::pick(const RouteQuery& query, std::span<const Candidate> candidates) {
  const auto blocks = state_.blocks(query);
  // Most requests of a session go home, where its context alone is: when
  // no other instance holds as much of the prompt and the home surely may
  // take it, the full pick below would choose it too (its soonest_free()
  // among the longest usable matches included), and this finds it without
  // matching the prompt against every candidate.
  if (const auto home = state_.surely_usable_home(homes_, query, candidates, blocks,
                                                  balance_factor_, /*longest_alone=*/true)) {
    rotation_.picked(candidates[home->position]);
    RouteDecision d;
    d.position = home->position;
    d.reason = RouteReason::hit;
    return routed(d, query, candidates, blocks, home->matched);
  }

  state_.match(candidates, blocks, matches_);
  const long tokens = estimated_tokens(query.prompt.size());
  const PrefillCost cost(candidates, balance_factor_, tokens, matches_);
  const Eligible usable(cost, homes_, query.session);
  std::size_t longest = 0, longest_usable = 0, best = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (matches_[i] > longest) best = i;
    longest = std::max(longest, matches_[i]);
    if (matches_[i] > longest_usable && usable(candidates[i])) longest_usable = matches_[i];
  }

  RouteDecision d;
  if (longest > longest_usable && query.tried.empty()) {
    // The longest match is busy, over the bound or behind a long prefill; a
    // retry has waited already.
    const double rate = state_.speed().prefill_rate();
    const long redo = static_cast<long>(longest - longest_usable) * kBlockTokens;
    const bool slow_only = !any_free(candidates, usable.beside(candidates[best]));
    const bool worth_it = wait_.outlasts_wait(prefill_seconds(redo, rate).count()) || slow_only;
    if (const auto until = wait_for_home(wait_, homes_, cost, candidates[best], query.session,
                                         tokens, worth_it, slow_only, rate)) {
      d.wait_until = until;
      return d;
    }
  }
  if (longest_usable > 0) {
    // Among equal matches (a prefix sent to two instances), the freer one.
    d.position = soonest_free(candidates, state_.speed(), rotation_, [&](const Candidate& c) {
      const auto i = static_cast<std::size_t>(&c - candidates.data());
      return matches_[i] == longest_usable && usable(c);
    });
    d.reason = longest_usable == longest ? RouteReason::hit : RouteReason::bounded_out;
  } else if (longest == 0 && !query.session.empty()) {
    place_session(d, query, candidates, cost, usable, tokens);
    if (d.wait_until) return d;
  } else {
    // The prompt starts a new home: spread homes evenly.
    d.position = homes_.place(candidates, usable, state_.speed(), rotation_, cost.soonest_start());
    d.reason = longest > 0 ? RouteReason::bounded_out : RouteReason::cold;
  }
  return routed(d, query, candidates, blocks, matches_[d.position]);
}

RouteDecision PrefixAffinity::routed(RouteDecision d, const RouteQuery& query,
                                     std::span<const Candidate> candidates,
                                     std::span<const BlockHash> blocks, std::size_t matched) {
  d.home_waited = wait_.end(query.session);
  d.match = share_held(blocks, matched);
  state_.record(candidates[d.position].index, blocks);
  // Where the session's context now is (its longest prefix anywhere).
  if (!query.session.empty())
    homes_.set(query.session, candidates[d.position].index, query.prompt.size());
  return d;
}

void PrefixAffinity::place_session(RouteDecision& d, const RouteQuery& query,
                                   std::span<const Candidate> candidates, const PrefillCost& cost,
                                   const Eligible& usable, long tokens) {
  // A new session, or one whose context died with its home: its home is
  // the lightest instance, busy or not, as the session policy places it,
  // and a session heavier than the mean waits for it (homes.h), as does
  // one that would start later anywhere else.
  const auto moved = lost_home(query.session, candidates);
  const std::size_t home = homes_.lightest(candidates, query.session);
  const auto soon = usable.beside(candidates[home]);
  if (!usable(candidates[home]) && query.tried.empty()) {
    const bool slow_only = !any_free(candidates, soon);
    const bool worth_it = homes_.outweighs_mean(candidates, query.session, tokens) || slow_only;
    if (const auto until =
            wait_for_home(wait_, homes_, cost, candidates[home], query.session, tokens, worth_it,
                          slow_only, state_.speed().prefill_rate())) {
      d.wait_until = until;
      return;
    }
  }
  d.position = usable(candidates[home]) ? home
                                        : homes_.place(candidates, soon, state_.speed(), rotation_,
                                                       cost.soonest_start());
  d.reason = moved ? RouteReason::session_moved : RouteReason::cold;
  if (moved)
    spdlog::info("routing: session moved from instance #{} (not routable) to {}", *moved,
                 *candidates[d.position].name);
}

std::optional<std::size_t> PrefixAffinity::lost_home(std::string_view session,
                                                     std::span<const Candidate> candidates) const {
  const auto home = session.empty() ? std::nullopt : homes_.find(session);
  if (!home) return std::nullopt;
  for (const auto& c : candidates)
    if (c.index == *home) return std::nullopt;
  return home;
}

double PrefixAffinity::match(const RouteQuery& query, const Candidate& instance) {
  const auto blocks = state_.blocks(query);
  return share_held(blocks, state_.match(instance, blocks));  // a restarted engine holds nothing
}

}  // namespace switchyard::gateway
