// Open-loop arrival times: a Poisson process (burstiness 1) or, as in
// `vllm bench serve`, gamma-distributed gaps with shape = burstiness and the
// same mean 1/rate (burstiness < 1 is burstier, > 1 more regular).
#pragma once

#include <cstdint>
#include <random>

namespace switchyard::bench {

class Arrivals {
 public:
  // Preconditions: rate > 0, burstiness > 0.
  Arrivals(double rate, double burstiness, std::uint64_t seed);

  // Seconds from the previous arrival to the next one.
  double next_gap();

 private:
  std::mt19937_64 rng_;
  std::gamma_distribution<double> gap_;
};

}  // namespace switchyard::bench
