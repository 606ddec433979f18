#include "gateway/routing/least_outstanding.h"

namespace switchyard::gateway {

RouteDecision LeastOutstanding::pick(const RouteQuery&, std::span<const Candidate> candidates) {
  RouteDecision d;
  d.position = soonest_free(candidates, speed_, rotation_);
  return d;
}

void LeastOutstanding::finished(const Candidate& instance, const RouteFeedback& feedback) {
  speed_.observe(instance.index, feedback);
}

}  // namespace switchyard::gateway
