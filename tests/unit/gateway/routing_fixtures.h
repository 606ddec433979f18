// Candidates and queries for the tests of the routing policies.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "gateway/routing/policy.h"

namespace switchyard::gateway::testing_support {

// `n` idle instances of `slots` slots each, fleet indexes 0 to n-1.
inline std::vector<Candidate> fleet_of(int n, int slots = 2) {
  std::vector<Candidate> c;
  for (int i = 0; i < n; ++i)
    c.push_back(Candidate{static_cast<std::size_t>(i), 0, slots, true, 0, 1, "gpu"});
  return c;
}

// A request for model "m". A RouteQuery holds views: `prompt` and `session`
// must outlive it.
inline RouteQuery query(std::string_view prompt, std::string_view session = {}) {
  RouteQuery q;
  q.model = "m";
  q.prompt = prompt;
  q.session = session;
  return q;
}

}  // namespace switchyard::gateway::testing_support
