// How the router chooses among the instances that could take a request.
// The router decides which instances qualify (the model's, routable, with a
// free slot, not tried before); a policy only orders them.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "fleet/fleet_config.h"
#include "gateway/route_query.h"

namespace switchyard::gateway {

struct Candidate {
  std::size_t index;  // the instance's index in the fleet
  int in_flight;      // the gateway's requests on it now
  int slots;          // requests it runs at once
};

// Single-threaded, like the router that calls it.
class RoutingPolicy {
 public:
  virtual ~RoutingPolicy() = default;
  // The position in `free` (non-empty, in fleet order) of the instance to use.
  virtual std::size_t pick(const RouteQuery& query, std::span<const Candidate> free) = 0;
};

std::unique_ptr<RoutingPolicy> make_routing_policy(fleet::RoutingPolicy policy);

}  // namespace switchyard::gateway
