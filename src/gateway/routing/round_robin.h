// The baseline policy: the next instance in turn that has a free slot.
#pragma once

#include "gateway/routing/policy.h"
#include "gateway/routing/rotation.h"

namespace switchyard::gateway {

class RoundRobin final : public RoutingPolicy {
 public:
  const char* name() const override { return "round-robin"; }
  RouteDecision pick(const RouteQuery& query, std::span<const Candidate> candidates) override;
  void finished(const Candidate&, const RouteFeedback&) override {}

 private:
  Rotation rotation_;
};

}  // namespace switchyard::gateway
