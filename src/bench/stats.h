// Latency summaries: percentiles and means over a sample, as the bench reports them.
#pragma once

#include <vector>

namespace switchyard::bench {

// p50/p90/p99, the mean and the percentiles of a sample; all zero (and no
// percentiles) for an empty sample. Every figure is over the same values.
struct Summary {
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
  double mean = 0;
  std::size_t count = 0;
  // The 0th, 1st, …, 100th percentiles (quantile() at q = i / 100): the
  // sample's distribution for the report's CDFs; empty for an empty sample.
  std::vector<double> percentiles;
};

// The q-quantile (0 ≤ q ≤ 1) of `sorted` (ascending) by linear interpolation
// between closest ranks: numpy's default and what `vllm bench serve` uses, so
// the numbers compare. Precondition: !sorted.empty().
double quantile(const std::vector<double>& sorted, double q);

// Sorts a copy of `values` and summarises it.
Summary summarize(std::vector<double> values);

}  // namespace switchyard::bench
