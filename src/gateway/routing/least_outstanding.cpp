#include "gateway/routing/least_outstanding.h"

namespace switchyard::gateway {

std::size_t LeastOutstanding::pick(const RouteQuery&, std::span<const Candidate> free) {
  const std::size_t n = free.size();
  const std::size_t first = rotation_.start(free);
  std::size_t best = first;
  for (std::size_t k = 1; k < n; ++k) {
    const std::size_t i = (first + k) % n;
    // Fewer outstanding per slot: in_flight / slots, compared without division.
    if (free[i].in_flight * free[best].slots < free[best].in_flight * free[i].slots) best = i;
  }
  rotation_.picked(free[best]);
  return best;
}

}  // namespace switchyard::gateway
