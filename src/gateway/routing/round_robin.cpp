#include "gateway/routing/round_robin.h"

namespace switchyard::gateway {

std::size_t RoundRobin::pick(const RouteQuery&, std::span<const Candidate> free) {
  const std::size_t i = rotation_.start(free);
  rotation_.picked(free[i]);
  return i;
}

}  // namespace switchyard::gateway
