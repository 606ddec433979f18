// The default policy: the instance with the largest free share of its slots
// (fewest outstanding requests per slot), ties taken in rotation.
#pragma once

#include "gateway/routing/policy.h"
#include "gateway/routing/rotation.h"

namespace switchyard::gateway {

class LeastOutstanding final : public RoutingPolicy {
 public:
  std::size_t pick(const RouteQuery& query, std::span<const Candidate> free) override;

 private:
  Rotation rotation_;
};

}  // namespace switchyard::gateway
