// Latency summaries: percentiles and means over a sample, as the bench reports them.
#pragma once

#include <vector>

namespace switchyard::bench {

// p50/p90/p99 and the mean of a sample; all zero for an empty sample.
struct Summary {
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double mean = 0;
  std::size_t count = 0;
};

// The q-quantile (0 ≤ q ≤ 1) of `sorted` (ascending) by linear interpolation
// between closest ranks: numpy's default and what `vllm bench serve` uses, so
// the numbers compare. Precondition: !sorted.empty().
double quantile(const std::vector<double>& sorted, double q);

// Sorts a copy of `values` and summarises it.
Summary summarize(std::vector<double> values);

}  // namespace switchyard::bench
