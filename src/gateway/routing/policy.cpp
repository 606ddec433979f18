#include "gateway/routing/policy.h"

#include "gateway/routing/least_outstanding.h"
#include "gateway/routing/round_robin.h"

namespace switchyard::gateway {

std::unique_ptr<RoutingPolicy> make_routing_policy(fleet::RoutingPolicy policy) {
  switch (policy) {
    case fleet::RoutingPolicy::round_robin:
      return std::make_unique<RoundRobin>();
    case fleet::RoutingPolicy::least_outstanding:
      break;
  }
  return std::make_unique<LeastOutstanding>();
}

}  // namespace switchyard::gateway
