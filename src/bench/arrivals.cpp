#include "bench/arrivals.h"

namespace switchyard::bench {

Arrivals::Arrivals(double rate, double burstiness, std::uint64_t seed)
    : rng_(seed), gap_(burstiness, 1.0 / (rate * burstiness)) {}

double Arrivals::next_gap() {
  return gap_(rng_);
}

}  // namespace switchyard::bench
