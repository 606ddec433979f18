#include "plan/kv_math.h"

#include <gtest/gtest.h>

namespace switchyard::plan {
namespace {

ModelFacts uniform(uint32_t layers, uint32_t heads, uint32_t dims) {
  ModelFacts m;
  m.layers.assign(layers, LayerFacts{LayerKind::kFullAttention, heads});
  m.key_length = m.value_length = m.key_length_swa = m.value_length_swa = dims;
  return m;
}

TEST(KvMath, ElementSizes) {
  EXPECT_EQ(kv_bytes_per_element(KvType::kF16), 2.0);
  EXPECT_EQ(kv_bytes_per_element(KvType::kQ8_0), 1.0625);
  EXPECT_EQ(kv_bytes_per_element(KvType::kQ4_0), 0.5625);
  EXPECT_EQ(kv_bytes_per_element(KvType::kFp8), 1.0);
  EXPECT_EQ(parse_kv_type("q8_0"), KvType::kQ8_0);
  EXPECT_EQ(parse_kv_type("bf16"), std::nullopt);
  EXPECT_EQ(kv_type_name(KvType::kQ4_0), "q4_0");
}

// stories260K's shape: 5 layers x 4 KV heads x (8 + 8).
TEST(KvMath, BytesPerTokenAndSequence) {
  const ModelFacts m = uniform(5, 4, 8);
  EXPECT_EQ(kv_footprint(m, KvType::kF16).bytes_per_token(), 640.0);
  EXPECT_EQ(kv_footprint(m, KvType::kQ8_0).bytes_per_token(), 340.0);
  EXPECT_EQ(kv_footprint(m, KvType::kQ4_0).bytes_per_token(), 180.0);
  EXPECT_EQ(kv_footprint(m, KvType::kF16).bytes_per_sequence(2048), 640.0 * 2048);
}

TEST(KvMath, SlidingLayersStopAtTheWindowAndStateIsPerSequence) {
  ModelFacts m = uniform(4, 2, 64);
  m.layers[0].kind = LayerKind::kSlidingAttention;
  m.layers[1].kind = LayerKind::kRecurrent;
  m.layers[2].kind = LayerKind::kNone;
  m.sliding_window = 100;
  m.recurrent_state_elements = 1000;
  const KvFootprint kv = kv_footprint(m, KvType::kF16);
  EXPECT_EQ(kv.full_bytes_per_token, 2 * 128 * 2.0);
  EXPECT_EQ(kv.sliding_bytes_per_token, 2 * 128 * 2.0);
  EXPECT_EQ(kv.state_bytes_per_sequence, 4000u);
  EXPECT_EQ(kv.bytes_per_sequence(50), 512.0 * 50 + 512.0 * 50 + 4000);
  EXPECT_EQ(kv.bytes_per_sequence(1000), 512.0 * 1000 + 512.0 * 100 + 4000);
}

TEST(KvMath, SlidingLayersMayHaveTheirOwnHeadSize) {
  ModelFacts m = uniform(2, 1, 128);
  m.layers[1].kind = LayerKind::kSlidingAttention;
  m.key_length_swa = m.value_length_swa = 64;
  m.sliding_window = 10;
  EXPECT_EQ(kv_footprint(m, KvType::kFp8).sliding_bytes_per_token, 128.0);
  EXPECT_EQ(kv_footprint(m, KvType::kFp8).full_bytes_per_token, 256.0);
}

TEST(KvMath, MlaIgnoresHeadsAndKeepsNoV) {
  ModelFacts m = uniform(2, 128, 192);
  m.mla = true;
  m.kv_lora_rank = 512;
  m.rope_dim = 64;
  EXPECT_EQ(kv_footprint(m, KvType::kF16).bytes_per_token(), 2 * 576 * 2.0);
}

}  // namespace
}  // namespace switchyard::plan
