#include "sim/timing_model.h"

#include <gtest/gtest.h>

namespace switchyard::sim {
namespace {

TEST(TimingModel, DecodeCurveInterpolatesAndExtrapolates) {
  TimingOptions o;
  o.decode_curve = {{1, 0.010}, {4, 0.016}, {8, 0.032}};
  const TimingModel t(o);
  EXPECT_DOUBLE_EQ(t.decode_seconds(0), 0);
  EXPECT_DOUBLE_EQ(t.decode_seconds(1), 0.010);
  EXPECT_DOUBLE_EQ(t.decode_seconds(2), 0.012);
  EXPECT_DOUBLE_EQ(t.decode_seconds(6), 0.024);
  EXPECT_DOUBLE_EQ(t.decode_seconds(12), 0.048);  // the last slope, 4 ms per token
}

TEST(TimingModel, OnePointIsFlat) {
  const TimingModel t;  // 65 tok/s per sequence
  EXPECT_DOUBLE_EQ(t.decode_seconds(1), 1.0 / 65);
  EXPECT_DOUBLE_EQ(t.decode_seconds(7), 1.0 / 65);
}

TEST(TimingModel, PrefillSlowsWithDepth) {
  TimingOptions o;
  o.prefill_tokens_per_second = 1000;
  o.prefill_half_depth = 1000;
  const TimingModel t(o);
  EXPECT_DOUBLE_EQ(t.prefill_seconds(1000, 0), 1.5);  // 1 + integral of d/h
  // Chunks add up to the whole.
  EXPECT_DOUBLE_EQ(t.prefill_seconds(400, 0) + t.prefill_seconds(600, 400), 1.5);
  // Without a half depth the rate is flat.
  o.prefill_half_depth = 0;
  EXPECT_DOUBLE_EQ(TimingModel(o).prefill_seconds(1000, 5000), 1.0);
}

TEST(TimingModel, ExpectedTokensPerStepWithSpeculation) {
  TimingOptions o;
  o.spec_draft_tokens = 3;
  o.spec_acceptance = 0.5;
  EXPECT_DOUBLE_EQ(TimingModel(o).expected_tokens_per_step(), 1.875);
  EXPECT_DOUBLE_EQ(TimingModel().expected_tokens_per_step(), 1);
}

TEST(TimingModel, ParsesAndValidatesCurves) {
  auto c = parse_decode_curve("1:31.5,4:31.7,8:48.7");
  ASSERT_TRUE(c);
  ASSERT_EQ(c->size(), 3u);
  EXPECT_EQ((*c)[2].batch_tokens, 8);
  EXPECT_DOUBLE_EQ((*c)[1].seconds, 0.0317);
  EXPECT_EQ(format_decode_curve(*c), "1:31.5,4:31.7,8:48.7");
  EXPECT_FALSE(parse_decode_curve("4:10,2:10"));
  EXPECT_FALSE(parse_decode_curve("1:x"));
  EXPECT_FALSE(parse_decode_curve(""));
  TimingOptions bad;
  bad.spec_acceptance = 1;
  EXPECT_TRUE(validate(bad));
}

}  // namespace
}  // namespace switchyard::sim
