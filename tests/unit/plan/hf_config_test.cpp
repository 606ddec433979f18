#include "plan/hf_config.h"

#include <gtest/gtest.h>

#include "../support.h"
#include "gguf_test_writer.h"
#include "plan/kv_math.h"

namespace switchyard::plan {
namespace {

using namespace switchyard::testing_support;

TEST(HfConfig, LlamaStyleGqa) {
  auto m = facts_from_hf_config(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
    "num_key_value_heads": 8, "max_position_embeddings": 131072})",
                                "/m/config.json");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->architecture, "llama");
  EXPECT_EQ(m->context_length, 131072u);
  EXPECT_EQ(m->key_length, 128u);  // hidden_size / num_attention_heads
  EXPECT_FALSE(m->weights_bytes);
  EXPECT_EQ(kv_footprint(*m, KvType::kF16).bytes_per_token(), 32 * 8 * 256 * 2.0);
}

TEST(HfConfig, ExplicitHeadDimWins) {
  auto m = facts_from_hf_config(R"({"model_type": "qwen3", "num_hidden_layers": 64,
    "hidden_size": 5120, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128,
    "sliding_window": null, "use_sliding_window": false, "max_position_embeddings": 40960})",
                                "/m/config.json");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->key_length, 128u);
  EXPECT_EQ(m->count(LayerKind::kFullAttention), 64u);
}

TEST(HfConfig, UseSlidingWindowFalseTurnsTheWindowOff) {
  auto m = facts_from_hf_config(R"({"model_type": "qwen2", "num_hidden_layers": 4,
    "hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 2,
    "sliding_window": 4096, "use_sliding_window": false})",
                                "/m/config.json");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->sliding_window, 0u);
  EXPECT_EQ(m->count(LayerKind::kSlidingAttention), 0u);
}

TEST(HfConfig, LayerTypesAndTextConfig) {
  auto m = facts_from_hf_config(R"({"model_type": "gemma3", "architectures": ["X"],
    "text_config": {"num_hidden_layers": 4, "hidden_size": 640, "num_attention_heads": 4,
      "num_key_value_heads": 1, "head_dim": 256, "sliding_window": 512,
      "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention",
                      "full_attention"]}})",
                                "/m/config.json");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->count(LayerKind::kSlidingAttention), 3u);
  EXPECT_EQ(m->layers[3].kind, LayerKind::kFullAttention);
  const KvFootprint kv = kv_footprint(*m, KvType::kF16);
  EXPECT_EQ(kv.bytes_per_sequence(10000), 512 * 2.0 * 10000 + 3 * 512 * 2.0 * 512);
}

TEST(HfConfig, GemmaPatternWithoutLayerTypes) {
  auto m = facts_from_hf_config(R"({"model_type": "gemma2", "num_hidden_layers": 4,
    "hidden_size": 2304, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
    "sliding_window": 4096})",
                                "/m/config.json");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->layers[0].kind, LayerKind::kSlidingAttention);
  EXPECT_EQ(m->layers[1].kind, LayerKind::kFullAttention);
  EXPECT_EQ(m->count(LayerKind::kSlidingAttention), 2u);
}

// Qwen3-Next: gated delta net everywhere but every 4th layer.
TEST(HfConfig, LinearAttentionHybrid) {
  auto m = facts_from_hf_config(R"({"model_type": "qwen3_next", "num_hidden_layers": 48,
    "hidden_size": 2048, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
    "full_attention_interval": 4, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
    "linear_num_key_heads": 16, "linear_value_head_dim": 128, "linear_num_value_heads": 32,
    "max_position_embeddings": 262144})",
                                "/m/config.json");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->count(LayerKind::kFullAttention), 12u);
  EXPECT_EQ(m->count(LayerKind::kRecurrent), 36u);
  EXPECT_EQ(m->layers[3].kind, LayerKind::kFullAttention);
  EXPECT_EQ(m->recurrent_state_elements, 3u * (2 * 128 * 16 + 128 * 32) + 32u * 128 * 128);
  EXPECT_EQ(kv_footprint(*m, KvType::kFp8).bytes_per_token(), 12 * 2 * 512 * 1.0);

  auto missing = facts_from_hf_config(R"({"num_hidden_layers": 4, "hidden_size": 64,
    "num_attention_heads": 4, "full_attention_interval": 2})",
                                      "/m/config.json");
  ASSERT_FALSE(missing);
  EXPECT_TRUE(mentions(missing.error(), "linear_conv_kernel_dim")) << missing.error().message;
}

TEST(HfConfig, MlaLatent) {
  auto m = facts_from_hf_config(R"({"model_type": "deepseek_v3", "num_hidden_layers": 61,
    "hidden_size": 7168, "num_attention_heads": 128, "num_key_value_heads": 128,
    "kv_lora_rank": 512, "qk_rope_head_dim": 64, "q_lora_rank": 1536})",
                                "/m/config.json");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_TRUE(m->mla);
  EXPECT_EQ(kv_footprint(*m, KvType::kFp8).bytes_per_token(), 61 * 576 * 1.0);
}

TEST(HfConfig, ExplainsBadConfigs) {
  auto not_json = facts_from_hf_config("{nope", "/m/config.json");
  ASSERT_FALSE(not_json);
  EXPECT_TRUE(mentions(not_json.error(), "not valid JSON"));

  auto no_layers = facts_from_hf_config(R"({"hidden_size": 64})", "/m/config.json");
  ASSERT_FALSE(no_layers);
  EXPECT_TRUE(mentions(no_layers.error(), "num_hidden_layers is missing"));

  auto negative = facts_from_hf_config(R"({"num_hidden_layers": -3})", "/m/config.json");
  ASSERT_FALSE(negative);
  EXPECT_TRUE(mentions(negative.error(), "non-negative"));

  auto unknown_kind = facts_from_hf_config(R"({"num_hidden_layers": 2, "hidden_size": 64,
    "num_attention_heads": 4, "layer_types": ["mamba", "full_attention"]})",
                                           "/m/config.json");
  ASSERT_FALSE(unknown_kind);
  EXPECT_TRUE(mentions(unknown_kind.error(), "'mamba'")) << unknown_kind.error().message;

  auto short_types = facts_from_hf_config(R"({"num_hidden_layers": 3, "hidden_size": 64,
    "num_attention_heads": 4, "layer_types": ["full_attention"]})",
                                          "/m/config.json");
  ASSERT_FALSE(short_types);
}

TEST(HfConfig, WeightsFromTheSafetensorsIndex) {
  testing::TempDir dir;
  testing::write_text(dir / "config.json", R"({"num_hidden_layers": 2, "hidden_size": 64,
    "num_attention_heads": 4})");
  auto without = load_hf_config(dir.path());
  ASSERT_TRUE(without) << without.error().message;
  EXPECT_FALSE(without->weights_bytes);
  EXPECT_EQ(without->name.rfind("switchyard-plan-", 0), 0u);  // named after the directory

  testing::write_text(dir / "model.safetensors.index.json",
                      R"({"metadata": {"total_size": 54000000000}, "weight_map": {}})");
  auto with = load_hf_config(dir / "config.json");
  ASSERT_TRUE(with) << with.error().message;
  EXPECT_EQ(with->weights_bytes, 54000000000u);
}

}  // namespace
}  // namespace switchyard::plan
