// prefix-affinity: the request goes to the instance that was last sent the
// longest prefix of its prompt, unless that would put the instance over the
// load bound (balance.h); then to the next-best match under the bound. When
// the longest match is busy, over the bound, or running requests its
// prefill would hold up (PrefillCost), the request may wait for it
// (home_wait.h). A session's prompt that matches nowhere (a new session, or
// one whose home is gone: it moves once) goes to the instance whose homes
// weigh least, busy or not, and may wait for it likewise (homes.h: where
// each session's last request went); with no session, or a match only over
// the bound, to the free instance whose homes weigh least. What the engine
// caches is what the gateway sent it, as far as its KV cache holds
// (affinity.h).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/routing/affinity.h"
#include "gateway/routing/home_wait.h"
#include "gateway/routing/homes.h"
#include "gateway/routing/policy.h"
#include "gateway/routing/rotation.h"

namespace switchyard::gateway {

class PrefixAffinity final : public RoutingPolicy {
 public:
  // `balance_factor` >= 1 (RoutingOptions); `homes` with the clock that
  // tells active sessions from idle ones.
  explicit PrefixAffinity(double balance_factor, Homes homes = Homes(),
                          HomeWait wait = HomeWait(std::chrono::milliseconds(0)))
      : balance_factor_(balance_factor), homes_(std::move(homes)), wait_(std::move(wait)) {}

  const char* name() const override { return "prefix-affinity"; }
  RouteDecision pick(const RouteQuery& query, std::span<const Candidate> candidates) override;
  void finished(const Candidate& instance, const RouteFeedback& feedback) override {
    state_.finished(instance, feedback);
  }
  void left(const RouteQuery& query) override { end_home_wait(wait_, homes_, query.session); }
  double match(const RouteQuery& query, const Candidate& instance) override;

 private:
  // A session's request whose prompt no instance holds: to its home (new,
  // or instead of one that is gone), or waiting for it (d.wait_until).
  // `tokens`: the prompt's estimated length.
  void place_session(RouteDecision& d, const RouteQuery& query,
                     std::span<const Candidate> candidates, const PrefillCost& cost,
                     const Eligible& usable, long tokens);
  // `d`, routed to d.position, which holds `matched` of the prompt's `blocks`.
  RouteDecision routed(RouteDecision d, const RouteQuery& query,
                       std::span<const Candidate> candidates, std::span<const BlockHash> blocks,
                       std::size_t matched);
  // The session's home when it is not among `candidates` (it died, or is
  // drained or ejected); nullopt for a new session or a home that is there.
  std::optional<std::size_t> lost_home(std::string_view session,
                                       std::span<const Candidate> candidates) const;

  const double balance_factor_;
  AffinityState state_;
  Rotation rotation_;
  Homes homes_;
  HomeWait wait_;
  std::vector<std::size_t> matches_;  // by candidate position, reused by pick()
};

}  // namespace switchyard::gateway
