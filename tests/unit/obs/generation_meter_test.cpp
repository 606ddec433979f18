#include "obs/generation_meter.h"

#include <gtest/gtest.h>

namespace switchyard::obs {
namespace {

using namespace std::chrono_literals;
using clock = GenerationMeter::clock;

// A time well past the clock's epoch, at the start of a second.
const clock::time_point t0 = clock::time_point(std::chrono::hours(1));

TEST(GenerationMeter, RateOverTheWholeSecondsOfTheWindow) {
  GenerationMeter m;
  for (int s = 0; s < 10; ++s) m.add("gpu0", 50, t0 + std::chrono::seconds(s) + 200ms);
  m.add("gpu1", 30, t0 + 9s);
  // At t0+10s the seconds t0..t0+9 are whole.
  EXPECT_DOUBLE_EQ(m.rate("gpu0", 10s, t0 + 10s), 50);
  EXPECT_DOUBLE_EQ(m.rate("gpu0", 5s, t0 + 10s), 50);
  EXPECT_DOUBLE_EQ(m.rate("gpu1", 10s, t0 + 10s), 3);
  EXPECT_DOUBLE_EQ(m.total_rate(10s, t0 + 10s), 53);
  // The second in progress is not counted yet.
  m.add("gpu0", 1000, t0 + 10s + 500ms);
  EXPECT_DOUBLE_EQ(m.rate("gpu0", 10s, t0 + 10s + 900ms), 50);
  EXPECT_DOUBLE_EQ(m.rate("nobody", 10s, t0 + 10s), 0);
}

TEST(GenerationMeter, AStallShowsAsTheWindowPassesAndOldSecondsAreForgotten) {
  GenerationMeter m;
  for (int s = 0; s < 10; ++s) m.add("gpu0", 20, t0 + std::chrono::seconds(s));
  EXPECT_DOUBLE_EQ(m.rate("gpu0", 10s, t0 + 15s), 10);
  EXPECT_DOUBLE_EQ(m.rate("gpu0", 10s, t0 + 30s), 0);
  // A burst after more than the history: the ring starts over cleanly.
  m.add("gpu0", 7, t0 + 2000s);
  EXPECT_DOUBLE_EQ(m.rate("gpu0", 1s, t0 + 2001s), 7);
  EXPECT_DOUBLE_EQ(m.rate("gpu0", 800s, t0 + 2001s), 7.0 / 800);
}

TEST(GenerationMeter, NothingCountedForNoTokensOrTimesTooOld) {
  GenerationMeter m;
  m.add("gpu0", 0, t0);
  m.add("gpu0", -5, t0);
  EXPECT_DOUBLE_EQ(m.rate("gpu0", 10s, t0 + 1s), 0);
  m.add("gpu0", 10, t0 + 1000s);
  m.add("gpu0", 99, t0);  // older than the history kept: dropped
  EXPECT_DOUBLE_EQ(m.rate("gpu0", 899s, t0 + 1001s), 10.0 / 899);
}

TEST(GenerationMeter, AStreamCountsThroughItsInstancesSeries) {
  GenerationMeter m;
  auto& gpu0 = m.series("gpu0");
  EXPECT_DOUBLE_EQ(m.rate("gpu0", 10s, t0 + 10s), 0);  // looked up, nothing counted yet
  for (int s = 0; s < 10; ++s) GenerationMeter::add(gpu0, 40, t0 + std::chrono::seconds(s));
  m.add("gpu0", 100, t0 + 9s);
  EXPECT_EQ(&m.series("gpu0"), &gpu0);
  m.add("gpu1", 5, t0 + 9s);  // a series more leaves gpu0's where it was
  GenerationMeter::add(gpu0, 10, t0 + 9s);
  EXPECT_DOUBLE_EQ(m.rate("gpu0", 10s, t0 + 10s), 51);
  EXPECT_DOUBLE_EQ(m.total_rate(10s, t0 + 10s), 51.5);
}

}  // namespace
}  // namespace switchyard::obs
