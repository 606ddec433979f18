#include "bench/stats.h"

#include <gtest/gtest.h>

#include "bench/arrivals.h"

namespace switchyard::bench {
namespace {

TEST(Stats, PercentilesInterpolateBetweenClosestRanks) {
  // 1..10: rank = q × 9; p50 → 4.5 → 5.5, p90 → 8.1 → 9.1, p99 → 8.91 → 9.91.
  const auto s = summarize({10, 9, 8, 7, 6, 5, 4, 3, 2, 1});
  EXPECT_DOUBLE_EQ(s.p50, 5.5);
  EXPECT_DOUBLE_EQ(s.p90, 9.1);
  EXPECT_DOUBLE_EQ(s.p99, 9.91);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_EQ(s.count, 10u);
}

TEST(Stats, UnevenSample) {
  // {2, 4, 40}: p50 = 4; p90 → rank 1.8 → 4 + 0.8 × 36 = 32.8; mean 46/3.
  const auto s = summarize({40, 2, 4});
  EXPECT_DOUBLE_EQ(s.p50, 4);
  EXPECT_DOUBLE_EQ(s.p90, 32.8);
  EXPECT_NEAR(s.p99, 4 + 0.98 * 36, 1e-9);
  EXPECT_NEAR(s.mean, 46.0 / 3, 1e-12);
}

TEST(Stats, OneValueAndNone) {
  const auto one = summarize({7});
  EXPECT_EQ(one.p50, 7);
  EXPECT_EQ(one.p99, 7);
  EXPECT_EQ(one.mean, 7);
  const auto none = summarize({});
  EXPECT_EQ(none.count, 0u);
  EXPECT_EQ(none.p50, 0);
  EXPECT_EQ(none.mean, 0);
}

// Mean and variance of many gaps for a fixed seed: the gamma(k, 1/(r k))
// gaps have mean 1/r and variance 1/(k r²); k = 1 is Poisson (exponential gaps).
void expect_gap_moments(double rate, double burstiness) {
  Arrivals arrivals(rate, burstiness, 42);
  const int n = 200'000;
  double sum = 0;
  double sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double g = arrivals.next_gap();
    ASSERT_GE(g, 0);
    sum += g;
    sum_sq += g * g;
  }
  const double mean = sum / n;
  const double variance = sum_sq / n - mean * mean;
  EXPECT_NEAR(mean, 1 / rate, 0.01 / rate) << "rate " << rate << " burstiness " << burstiness;
  const double want_var = 1 / (burstiness * rate * rate);
  EXPECT_NEAR(variance, want_var, 0.03 * want_var)
      << "rate " << rate << " burstiness " << burstiness;
}

TEST(Arrivals, PoissonGapsHaveMeanAndVarianceOfTheRate) {
  expect_gap_moments(4, 1);
}
TEST(Arrivals, BurstyGapsKeepTheMeanAndRaiseTheVariance) {
  expect_gap_moments(4, 0.5);
}
TEST(Arrivals, RegularGapsLowerTheVariance) {
  expect_gap_moments(10, 4);
}

TEST(Arrivals, SameSeedSameArrivals) {
  Arrivals a(2, 1, 7);
  Arrivals b(2, 1, 7);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next_gap(), b.next_gap());
}

}  // namespace
}  // namespace switchyard::bench
