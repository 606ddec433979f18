#include "gateway/routing/prefix_affinity.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "gateway/routing/balance.h"

namespace switchyard::gateway {

RouteDecision PrefixAffinity::pick(const RouteQuery& query, std::span<const Candidate> candidates) {
  state_.sync(candidates);
  const auto blocks = state_.blocks(query);
  const LoadBound bound(candidates, balance_factor_);

  matches_.assign(candidates.size(), 0);
  std::size_t longest = 0, longest_admitted = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    matches_[i] = state_.match(candidates[i].index, blocks);
    longest = std::max(longest, matches_[i]);
    if (bound.admits(candidates[i])) longest_admitted = std::max(longest_admitted, matches_[i]);
  }

  RouteDecision d;
  if (longest > longest_admitted && query.tried.empty()) {
    // The longest match is busy or over the bound; a retry has waited already.
    const double rate = state_.speed().prefill_rate();
    const auto redo = static_cast<double>((longest - longest_admitted) * kBlockTokens);
    if (const auto until =
            wait_.until(query.session, wait_.outlasts_wait(rate > 0 ? redo / rate : 0))) {
      d.wait_until = until;
      return d;
    }
  }
  std::size_t pos = kNoCandidate;
  if (longest_admitted > 0) {
    // Among equal matches (a prefix sent to two instances), the freer one.
    pos = soonest_free(candidates, state_.speed(), rotation_, [&](const Candidate& c) {
      const auto i = static_cast<std::size_t>(&c - candidates.data());
      return matches_[i] == longest_admitted && bound.admits(c);
    });
    d.reason = longest_admitted == longest ? RouteReason::hit : RouteReason::bounded_out;
  } else if (longest == 0 && !query.session.empty()) {
    // A new session, or one whose context died with its home: its home is
    // the lightest instance, busy or not, as the session policy places it,
    // and a session heavier than the mean waits for it (homes.h).
    const auto moved = lost_home(query.session, candidates);
    const std::size_t home = homes_.lightest(candidates);
    if (!bound.admits(candidates[home]) && query.tried.empty()) {
      const long weight = Homes::tokens(query.prompt.size());
      if (const auto until = wait_.until(
              query.session, homes_.outweighs_mean(candidates, query.session, weight))) {
        d.wait_until = until;
        return d;
      }
    }
    pos = bound.admits(candidates[home])
              ? home
              : homes_.place(candidates, bound, state_.speed(), rotation_);
    d.reason = moved ? RouteReason::session_moved : RouteReason::cold;
    if (moved)
      spdlog::info("routing: session moved from instance #{} (not routable) to {}", *moved,
                   candidates[pos].name);
  } else {
    // The prompt starts a new home: spread homes evenly.
    pos = homes_.place(candidates, bound, state_.speed(), rotation_);
    d.reason = longest > 0 ? RouteReason::bounded_out : RouteReason::cold;
  }
  d.home_waited = wait_.end(query.session);
  d.position = pos;
  d.match = blocks.empty()
                ? 0.0
                : static_cast<double>(matches_[pos]) / static_cast<double>(blocks.size());
  state_.record(candidates[pos].index, blocks);
  // Where the session's context now is (its longest prefix anywhere).
  if (!query.session.empty()) homes_.set(query.session, candidates[pos].index, query.prompt.size());
  return d;
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
  state_.sync({&instance, 1});  // a restarted engine holds nothing
  const auto blocks = state_.blocks(query);
  if (blocks.empty()) return 0;
  return static_cast<double>(state_.match(instance.index, blocks)) /
         static_cast<double>(blocks.size());
}

}  // namespace switchyard::gateway
