// The baseline policy: the next instance in turn that has a free slot.
#pragma once

#include "gateway/routing/policy.h"
#include "gateway/routing/rotation.h"

namespace switchyard::gateway {

class RoundRobin final : public RoutingPolicy {
 public:
  std::size_t pick(const RouteQuery& query, std::span<const Candidate> free) override;

 private:
  Rotation rotation_;
};

}  // namespace switchyard::gateway
