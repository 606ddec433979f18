#include "gateway/routing/round_robin.h"

namespace switchyard::gateway {

RouteDecision RoundRobin::pick(const RouteQuery&, std::span<const Candidate> candidates) {
  const std::size_t n = candidates.size();
  const std::size_t first = rotation_.start(candidates);
  std::size_t i = first;
  for (std::size_t k = 0; k < n; ++k, i = i + 1 == n ? 0 : i + 1)
    if (candidates[i].free) break;
  rotation_.picked(candidates[i]);
  RouteDecision d;
  d.position = i;
  return d;
}

}  // namespace switchyard::gateway
