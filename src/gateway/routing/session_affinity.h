// session: every request of an agent session (X-Session-Id, else the API
// key, model and opening of the conversation: gateway/session_id.h) goes to
// the session's home instance, within the load bound (balance.h) and unless
// the home would start it far later than another instance or its prefill
// would hold up what the home runs (PrefillCost); over the bound, behind a
// long prefill or with its slots busy, a request waits for its home when
// the prefill it would redo elsewhere outweighs the wait (home_wait.h), else
// spills to the least loaded instance, and the home stays unless it holds
// none of the prompt. A new session's home, and the new home of a session
// whose home is gone (not routable: it moves once), is the routable
// instance whose homes weigh least, free or not (homes.h).
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

class SessionAffinity final : public RoutingPolicy {
 public:
  // `balance_factor` >= 1 (RoutingOptions); `homes` with the clock that
  // tells active sessions from idle ones.
  explicit SessionAffinity(double balance_factor, Homes homes = Homes(),
                           HomeWait wait = HomeWait(std::chrono::milliseconds(0)))
      : balance_factor_(balance_factor), homes_(std::move(homes)), wait_(std::move(wait)) {}

  const char* name() const override { return "session"; }
  RouteDecision pick(const RouteQuery& query, std::span<const Candidate> candidates) override;
  void finished(const Candidate& instance, const RouteFeedback& feedback) override {
    state_.finished(instance, feedback);
  }
  void left(const RouteQuery& query) override { end_home_wait(wait_, homes_, query.session); }

  // 1 for the session's home, else 0.
  double match(const RouteQuery& query, const Candidate& instance) override {
    return home(query.session) == instance.index ? 1 : 0;
  }

  // The session's home instance, if it has one (for tests and logs).
  std::optional<std::size_t> home(std::string_view session) const { return homes_.find(session); }

 private:
  // Where the session's home is among the candidates, and whether this
  // request gives the session its home (new, or `moved` from one that is gone).
  struct Seat {
    std::size_t pos;
    bool placed;
    bool moved;
  };
  RouteDecision to_home(const RouteQuery& query, std::span<const Candidate> candidates,
                        const PrefillCost& cost, const Eligible& usable);
  // The home cannot take the request now: wait for it (d.wait_until), or spill.
  void away_from_home(RouteDecision& d, const RouteQuery& query,
                      std::span<const Candidate> candidates, const PrefillCost& cost,
                      const Eligible& usable, Seat home);
  std::size_t least_loaded(std::span<const Candidate> candidates, const PrefillCost& cost,
                           const Eligible& usable);
  // `d`, routed to d.position, which holds `matched` of the prompt's `blocks`.
  RouteDecision routed(RouteDecision d, const RouteQuery& query,
                       std::span<const Candidate> candidates, std::span<const BlockHash> blocks,
                       std::size_t matched);

  const double balance_factor_;
  AffinityState state_;  // match ratios for the route header, rates, restarts
  Rotation rotation_;
  Homes homes_;
  HomeWait wait_;
  std::vector<std::size_t> matches_;  // by candidate, reused by pick()
};

}  // namespace switchyard::gateway
