// prefix-affinity: the request goes to the instance that was last sent the
// longest prefix of its prompt, unless that would put the instance over the
// load bound (balance.h); then to the next-best match under the bound; then
// to the least loaded. What the engine caches is what the gateway sent it,
// as far as its KV cache holds (affinity.h).
#pragma once

#include "gateway/routing/affinity.h"
#include "gateway/routing/policy.h"
#include "gateway/routing/rotation.h"

namespace switchyard::gateway {

class PrefixAffinity final : public RoutingPolicy {
 public:
  // `balance_factor` >= 1 (RoutingOptions).
  explicit PrefixAffinity(double balance_factor) : balance_factor_(balance_factor) {}

  const char* name() const override { return "prefix-affinity"; }
  RouteDecision pick(const RouteQuery& query, std::span<const Candidate> candidates) override;
  void finished(const Candidate& instance, const RouteFeedback& feedback) override {
    state_.finished(instance, feedback);
  }
  double match(const RouteQuery& query, const Candidate& instance) override;

 private:
  const double balance_factor_;
  AffinityState state_;
  Rotation rotation_;
  std::vector<std::size_t> matches_;  // by candidate position, reused
};

}  // namespace switchyard::gateway
