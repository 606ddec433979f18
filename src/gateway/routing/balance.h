// What every policy weighs besides affinity: how loaded each instance is
// against the bound, and how fast each delivers tokens.
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <vector>

#include "gateway/routing/policy.h"
#include "gateway/routing/rotation.h"

namespace switchyard::gateway {

// Consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam;
// HAProxy's hash-balance-factor) with one request of slack: an instance may
// take one more request only while its requests, counting this one, stay
// within ceil(factor × (requests in flight + 1) × its slots / all slots) + 1.
// Without the slack, a fleet whose mean is under one request per instance
// bounds every instance at 1, so a second request for a home that has a free
// slot spills to an instance without its prefix: a full prefill to avoid
// running two requests side by side, which an engine with slots does without
// queueing. The slack is one request, not the instance's free slots, so the
// bound still spreads a hot prefix once the fleet is loaded (the excess over
// the mean stays under factor × mean + 1).
class LoadBound {
 public:
  // Requests an instance may run beyond factor × the mean (rounded up).
  static constexpr long kSlack = 1;

  LoadBound(std::span<const Candidate> candidates, double factor);
  bool admits(const Candidate& c) const;

 private:
  long in_flight_ = 0;
  long slots_ = 0;
  double factor_;
};

// Tokens per second of wall time each instance delivered per request
// (EWMA), by fleet index: a card 18 % slower on the same die is only seen
// in what it delivers. A streamed answer counts the tokens after its first
// over the time after its first event: the whole request's time depends on
// its prompt's length and how much of it was cached, which vary between
// requests far more than the cards do (a short warm-up prompt made the
// slower card look 40 % faster than either).
class Throughput {
 public:
  void observe(std::size_t index, const RouteFeedback& feedback);
  double rate(std::size_t index) const;  // 0 while unknown
  // Prompt tokens per second the instances evaluate (the uncached part of a
  // streamed answer's prompt over the time to its first event), the mean
  // over those measured; 0 while none is. What a spill's prefill would take.
  double prefill_rate() const;

 private:
  std::vector<double> rate_;
  std::vector<double> prefill_;  // by fleet index, 0 while unknown
};

// soonest_free()'s answer when no candidate qualifies.
inline constexpr std::size_t kNoCandidate = std::numeric_limits<std::size_t>::max();

// The free candidate (passing `allowed`) expected to finish a new request
// soonest: fewest requests per slot, each slot weighed by its instance's
// delivered rate (instances not yet measured count as the mean of the
// measured ones). Ties go in rotation. kNoCandidate when none qualifies.
template <class Allowed>
std::size_t soonest_free(std::span<const Candidate> candidates, const Throughput& speed,
                         Rotation& rotation, Allowed allowed);

inline std::size_t soonest_free(std::span<const Candidate> candidates, const Throughput& speed,
                                Rotation& rotation) {
  return soonest_free(candidates, speed, rotation, [](const Candidate&) { return true; });
}

template <class Allowed>
std::size_t soonest_free(std::span<const Candidate> candidates, const Throughput& speed,
                         Rotation& rotation, Allowed allowed) {
  double known = 0;
  int measured = 0;
  for (const auto& c : candidates) {
    if (const double r = speed.rate(c.index); r > 0) {
      known += r;
      ++measured;
    }
  }
  const double fallback = measured > 0 ? known / measured : 1.0;
  const std::size_t n = candidates.size();
  const std::size_t first = rotation.start(candidates);
  std::size_t best = kNoCandidate;
  double best_cost = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = (first + k) % n;
    const Candidate& c = candidates[i];
    if (!c.free || !allowed(c)) continue;
    const double r = speed.rate(c.index);
    const double cost = (c.in_flight + 1.0) / (std::max(c.slots, 1) * (r > 0 ? r : fallback));
    // Within a part in a thousand is a tie: measured rates jitter.
    if (best == kNoCandidate || cost < best_cost * 0.999) {
      best = i;
      best_cost = cost;
    }
  }
  if (best != kNoCandidate) rotation.picked(candidates[best]);
  return best;
}

}  // namespace switchyard::gateway
