// The default policy: the free instance expected to finish a new request
// soonest — fewest outstanding requests per slot, weighed by the tokens per
// second each instance has delivered (EWMA), so that of two idle cards the
// faster one serves. Ties taken in rotation.
#pragma once

#include "gateway/routing/balance.h"
#include "gateway/routing/policy.h"
#include "gateway/routing/rotation.h"

namespace switchyard::gateway {

class LeastOutstanding final : public RoutingPolicy {
 public:
  const char* name() const override { return "least-outstanding"; }
  RouteDecision pick(const RouteQuery& query, std::span<const Candidate> candidates) override;
  void finished(const Candidate& instance, const RouteFeedback& feedback) override;

 private:
  Rotation rotation_;
  Throughput speed_;
};

}  // namespace switchyard::gateway
