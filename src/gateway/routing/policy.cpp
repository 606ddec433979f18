#include "gateway/routing/policy.h"

#include "gateway/routing/least_outstanding.h"
#include "gateway/routing/prefix_affinity.h"
#include "gateway/routing/round_robin.h"
#include "gateway/routing/session_affinity.h"

namespace switchyard::gateway {

const char* to_string(RouteReason reason) {
  switch (reason) {
    case RouteReason::balanced:
      return "balanced";
    case RouteReason::hit:
      return "hit";
    case RouteReason::bounded_out:
      return "bounded-out";
    case RouteReason::cold:
      return "cold";
    case RouteReason::session_moved:
      return "session-moved";
  }
  return "balanced";
}

std::unique_ptr<RoutingPolicy> make_routing_policy(const config::RoutingOptions& options) {
  switch (options.policy) {
    case config::RoutingPolicy::round_robin:
      return std::make_unique<RoundRobin>();
    case config::RoutingPolicy::prefix_affinity:
      return std::make_unique<PrefixAffinity>(options.balance_factor, Homes(),
                                              HomeWait(options.home_wait));
    case config::RoutingPolicy::session:
      return std::make_unique<SessionAffinity>(options.balance_factor, Homes(),
                                               HomeWait(options.home_wait));
    case config::RoutingPolicy::least_outstanding:
      break;
  }
  return std::make_unique<LeastOutstanding>();
}

std::unique_ptr<RoutingPolicy> make_routing_policy(config::RoutingPolicy policy) {
  return make_routing_policy(config::RoutingOptions{policy});
}

}  // namespace switchyard::gateway
