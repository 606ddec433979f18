#include "bench/svg_chart.h"

#include <gtest/gtest.h>

#include <cmath>

#include "bench/stats.h"

namespace switchyard::bench {
namespace {

std::vector<double> values(const Ticks& t) {
  return t.values;
}

TEST(NiceTicks, StepsOfOneTwoOrFive) {
  // 0..480 tok/s: raw step 96 → 100.
  EXPECT_EQ(values(nice_ticks(0, 480)), (std::vector<double>{0, 100, 200, 300, 400, 500}));
  // 0..1: 0.2 steps, not 0.22.
  const Ticks unit = nice_ticks(0, 1);
  EXPECT_DOUBLE_EQ(unit.step, 0.2);
  ASSERT_EQ(unit.values.size(), 6u);
  EXPECT_DOUBLE_EQ(unit.values.back(), 1);
  // 0..37: raw 7.4 → 10; the last tick covers the maximum.
  EXPECT_EQ(values(nice_ticks(0, 37)), (std::vector<double>{0, 10, 20, 30, 40}));
  // 0..13.7 → steps of 5 (raw 2.74 → 5), not 2.74.
  EXPECT_EQ(values(nice_ticks(0, 13.7)), (std::vector<double>{0, 5, 10, 15}));
  // An offset range starts on a multiple of the step below the minimum.
  EXPECT_EQ(values(nice_ticks(103, 187)), (std::vector<double>{100, 120, 140, 160, 180, 200}));
}

TEST(NiceTicks, EveryStepIsOneTwoOrFiveTimesAPowerOfTen) {
  for (double hi : {0.003, 0.7, 1.0, 9.99, 42.0, 480.0, 1234.5, 98765.0}) {
    const Ticks t = nice_ticks(0, hi);
    const double mantissa = t.step / std::pow(10, std::floor(std::log10(t.step)));
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-9 || std::abs(mantissa - 2) < 1e-9 ||
                std::abs(mantissa - 5) < 1e-9)
        << hi << " → step " << t.step;
    EXPECT_GE(t.values.back(), hi);
    EXPECT_LE(t.values.front(), 0);
    EXPECT_GE(t.values.size(), 3u) << hi;
    EXPECT_LE(t.values.size(), 11u) << hi;
  }
}

TEST(NiceTicks, OneValueGetsARangeAroundIt) {
  const Ticks t = nice_ticks(5, 5);
  EXPECT_LE(t.values.front(), 5);
  EXPECT_GE(t.values.back(), 5);
  EXPECT_GT(t.values.size(), 1u);
  EXPECT_EQ(values(nice_ticks(0, 0)).front(), -1);
}

TEST(TickLabel, DecimalsFollowTheStep) {
  EXPECT_EQ(tick_label(300, 100), "300");
  EXPECT_EQ(tick_label(0.6000000001, 0.2), "0.6");
  EXPECT_EQ(tick_label(0.15, 0.05), "0.15");
  EXPECT_EQ(tick_label(0.05, 0.05), "0.05");
  EXPECT_EQ(tick_label(15, 5), "15");
}

TEST(CdfPoints, FromThePercentiles) {
  // 1..5: the percentiles interpolate between ranks; the CDF climbs 0 → 1.
  const Summary s = summarize({5, 1, 4, 2, 3});
  ASSERT_EQ(s.percentiles.size(), 101u);
  EXPECT_DOUBLE_EQ(s.percentiles.front(), 1);
  EXPECT_DOUBLE_EQ(s.percentiles[25], 2);
  EXPECT_DOUBLE_EQ(s.percentiles[50], s.p50);
  EXPECT_DOUBLE_EQ(s.percentiles[90], s.p90);
  EXPECT_DOUBLE_EQ(s.percentiles[99], s.p99);
  EXPECT_DOUBLE_EQ(s.percentiles.back(), 5);
  const auto cdf = cdf_points(s.percentiles);
  ASSERT_EQ(cdf.size(), 101u);
  EXPECT_EQ(cdf.front(), std::pair(1.0, 0.0));
  EXPECT_EQ(cdf.back(), std::pair(5.0, 1.0));
  for (std::size_t i = 1; i < cdf.size(); ++i) {
    EXPECT_GT(cdf[i].first, cdf[i - 1].first);
    EXPECT_GT(cdf[i].second, cdf[i - 1].second);
  }
}

TEST(CdfPoints, RepeatedValuesBecomeOneStep) {
  // Nine requests at 10 ms and one at 100: 90% of the sample sits at 10.
  const Summary s = summarize({10, 10, 10, 10, 10, 10, 10, 10, 10, 100});
  const auto cdf = cdf_points(s.percentiles);
  // quantile(q) interpolates from rank 8 (q = 8/9) on: p88 is still 10, p89 is not.
  EXPECT_EQ(cdf.front(), std::pair(10.0, 0.88));
  EXPECT_EQ(cdf.back(), std::pair(100.0, 1.0));
  EXPECT_EQ(cdf.size(), 13u);  // 10 once, then p89..p100
  EXPECT_TRUE(cdf_points({}).empty());
  EXPECT_TRUE(summarize({}).percentiles.empty());
}

TEST(WrapLabel, BreaksLongNamesAtSeparators) {
  EXPECT_EQ(wrap_label("short", 20), (std::vector<std::string>{"short"}));
  EXPECT_EQ(wrap_label("vllm-tp2-fp8-kv gfx1201 run", 16),
            (std::vector<std::string>{"vllm-tp2-fp8-kv", "gfx1201 run"}));
  const auto long_word = wrap_label(std::string(25, 'x'), 10);
  EXPECT_EQ(long_word, (std::vector<std::string>{std::string(10, 'x'), std::string(10, 'x'),
                                                 std::string(5, 'x')}));
  // Characters, not bytes: "é" is two bytes and stays whole.
  const auto accents = wrap_label("ééééé", 2);
  EXPECT_EQ(accents, (std::vector<std::string>{"éé", "éé", "é"}));
}

TEST(ScoreColor, RedAmberGreen) {
  EXPECT_EQ(score_color(0), "#d73027");
  EXPECT_EQ(score_color(0.5), "#fdae61");
  EXPECT_EQ(score_color(1), "#1a9850");
  EXPECT_EQ(score_color(7), "#1a9850");
}

TEST(LineChart, AxisRunsFromTickToTickAndTheLegendGrowsWithLongNames) {
  LineChart c;
  c.title = "t";
  c.series.push_back({"a", 0, "#000", false, {{1, 37}, {2, 60}}});
  const std::string one = line_chart(c);
  EXPECT_NE(one.find(">40</text>"), std::string::npos) << one;  // y top: 60 → ticks to 60
  EXPECT_NE(one.find(">60</text>"), std::string::npos);
  EXPECT_EQ(one.find(">66</text>"), std::string::npos);
  c.series[0].name = std::string(300, 'n');
  const std::string wrapped = line_chart(c);
  const auto height = [](const std::string& svg) {
    const auto at = svg.find("height=\"") + 8;
    return std::stoi(svg.substr(at));
  };
  EXPECT_GT(height(wrapped), height(one));
  EXPECT_NE(wrapped.find("<tspan"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::bench
