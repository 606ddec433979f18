#include "bench/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace switchyard::bench {

double quantile(const std::vector<double>& sorted, double q) {
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const auto hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Summary summarize(std::vector<double> values) {
  Summary s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.count = values.size();
  s.p50 = quantile(values, 0.50);
  s.p90 = quantile(values, 0.90);
  s.p99 = quantile(values, 0.99);
  s.percentiles.reserve(101);
  for (int i = 0; i <= 100; ++i) s.percentiles.push_back(quantile(values, i / 100.0));
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  return s;
}

}  // namespace switchyard::bench
