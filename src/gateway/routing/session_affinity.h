// session: every request of an agent session (X-Session-Id, else the API
// key, model and opening of the conversation: gateway/session_id.h) goes to
// the session's home instance, within the load bound (balance.h); over the
// bound or with its slots busy, a request spills to the least loaded
// instance and the home stays. A session whose home is gone (not routable)
// moves once, to the least loaded instance, which is its home from then on.
#pragma once

#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "gateway/routing/affinity.h"
#include "gateway/routing/policy.h"
#include "gateway/routing/rotation.h"

namespace switchyard::gateway {

class SessionAffinity final : public RoutingPolicy {
 public:
  // Sessions remembered at most, least recently used forgotten first.
  static constexpr std::size_t kMaxSessions = 1 << 16;

  // `balance_factor` >= 1 (RoutingOptions).
  explicit SessionAffinity(double balance_factor) : balance_factor_(balance_factor) {}

  const char* name() const override { return "session"; }
  RouteDecision pick(const RouteQuery& query, std::span<const Candidate> candidates) override;
  void finished(const Candidate& instance, const RouteFeedback& feedback) override {
    state_.finished(instance, feedback);
  }

  // 1 for the session's home, else 0.
  double match(const RouteQuery& query, const Candidate& instance) override {
    return home(query.session) == instance.index ? 1 : 0;
  }

  // The session's home instance, if it has one (for tests and logs).
  std::optional<std::size_t> home(std::string_view session) const;

 private:
  struct Home {
    std::size_t instance;
    std::list<std::string>::iterator recency;
  };
  void set_home(std::string_view session, std::size_t instance);

  const double balance_factor_;
  AffinityState state_;  // match ratios for the route header, rates, restarts
  Rotation rotation_;
  std::list<std::string> recency_;                    // most recently used first
  std::unordered_map<std::string_view, Home> homes_;  // keys view into recency_
};

}  // namespace switchyard::gateway
