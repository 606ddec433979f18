#include "plan/gguf_model.h"

#include <gtest/gtest.h>

#include "../support.h"
#include "gguf_test_writer.h"
#include "plan/kv_math.h"

namespace switchyard::plan {
namespace {

using namespace switchyard::testing_support;

using testing::GgufWriter;

Result<ModelFacts> facts(const GgufWriter& writer) {
  auto file = read_gguf(writer.bytes());
  if (!file) return file.error();
  return facts_from_gguf(*file, "/models/test.gguf");
}

std::vector<LayerKind> kinds(const ModelFacts& m) {
  std::vector<LayerKind> out;
  for (const auto& l : m.layers) out.push_back(l.kind);
  return out;
}

GgufWriter llama_like(uint32_t layers) {
  GgufWriter w;
  w.str("general.architecture", "llama")
      .u32("llama.block_count", layers)
      .u32("llama.embedding_length", 1024)
      .u32("llama.attention.head_count", 8)
      .tensor("token_embd.weight", {1024, 64}, testing::kTypeF16);
  return w;
}

TEST(GgufModel, Stories260KFromTheRealFile) {
  auto m = load_gguf_model(kStories);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->architecture, "llama");
  EXPECT_EQ(m->name, "stories260k");
  EXPECT_EQ(m->layers.size(), 5u);
  EXPECT_EQ(m->count(LayerKind::kFullAttention), 5u);
  EXPECT_EQ(m->layers[0].n_head_kv, 4u);
  // No key_length in the file: embedding_length 64 / head_count 8.
  EXPECT_EQ(m->key_length, 8u);
  EXPECT_EQ(m->value_length, 8u);
  EXPECT_EQ(m->context_length, 2048u);
  EXPECT_EQ(m->weights_bytes, 1171200u);
  EXPECT_EQ(kv_footprint(*m, KvType::kF16).bytes_per_token(), 640.0);
}

TEST(GgufModel, RopeDimensionCountIsReadWithoutMla) {
  GgufWriter w = llama_like(2);
  w.u32("llama.rope.dimension_count", 64);
  auto m = facts(w);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_FALSE(m->mla);
  EXPECT_EQ(m->rope_dim, 64u);
}

TEST(GgufModel, PerLayerKvHeadArrays) {
  GgufWriter w = llama_like(4);
  w.array<uint16_t>("llama.attention.head_count_kv", testing::kU16, {8, 8, 4, 2})
      .u32("llama.attention.key_length", 128)
      .u32("llama.attention.value_length", 64);
  auto m = facts(w);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->layers[2].n_head_kv, 4u);
  EXPECT_EQ(m->layers[3].n_head_kv, 2u);
  EXPECT_EQ(kv_footprint(*m, KvType::kF16).bytes_per_token(), (8 + 8 + 4 + 2) * (128 + 64) * 2.0);

  GgufWriter wrong = llama_like(4);
  wrong.u32_array("llama.attention.head_count_kv", {8, 8});
  auto bad = facts(wrong);
  ASSERT_FALSE(bad);
  EXPECT_TRUE(mentions(bad.error(), "has 2 entries but the model has 4 layers"))
      << bad.error().message;
}

TEST(GgufModel, AcceptsAnyIntegerTypeForNumericKeys) {
  GgufWriter w;
  w.str("general.architecture", "llama")
      .scalar<uint8_t>("llama.block_count", testing::kU8, 3)
      .scalar<int16_t>("llama.attention.head_count", testing::kI16, 4)
      .scalar<int64_t>("llama.attention.head_count_kv", testing::kI64, 2)
      .scalar<uint64_t>("llama.embedding_length", testing::kU64, 256)
      .scalar<int32_t>("llama.context_length", testing::kI32, 4096);
  auto m = facts(w);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->layers.size(), 3u);
  EXPECT_EQ(m->layers[0].n_head_kv, 2u);
  EXPECT_EQ(m->key_length, 64u);
  EXPECT_EQ(m->context_length, 4096u);

  GgufWriter negative;
  negative.str("general.architecture", "llama")
      .scalar<int32_t>("llama.block_count", testing::kI32, -1);
  auto bad = facts(negative);
  ASSERT_FALSE(bad);
  EXPECT_TRUE(mentions(bad.error(), "llama.block_count must be a non-negative integer"))
      << bad.error().message;
}

TEST(GgufModel, ExplainsMissingOrAbsurdKeys) {
  auto no_arch = facts(GgufWriter().u32("llama.block_count", 2));
  ASSERT_FALSE(no_arch);
  EXPECT_TRUE(mentions(no_arch.error(), "general.architecture")) << no_arch.error().message;

  auto no_layers = facts(GgufWriter().str("general.architecture", "llama"));
  ASSERT_FALSE(no_layers);
  EXPECT_TRUE(mentions(no_layers.error(), "llama.block_count is missing"));

  GgufWriter huge;
  huge.str("general.architecture", "llama").u64("llama.block_count", 1ull << 50);
  auto too_many = facts(huge);
  ASSERT_FALSE(too_many);
  EXPECT_TRUE(mentions(too_many.error(), "block_count")) << too_many.error().message;

  GgufWriter huge_state = llama_like(2);
  huge_state.u64("llama.ssm.inner_size", 1ull << 40).u32("llama.ssm.state_size", 16);
  auto state = facts(huge_state);
  ASSERT_FALSE(state);
  EXPECT_TRUE(mentions(state.error(), "llama.ssm.inner_size is out of range"))
      << state.error().message;

  GgufWriter no_dims;
  no_dims.str("general.architecture", "llama")
      .u32("llama.block_count", 2)
      .u32("llama.attention.head_count_kv", 2);
  auto underivable = facts(no_dims);
  ASSERT_FALSE(underivable);
  EXPECT_TRUE(mentions(underivable.error(), "key_length")) << underivable.error().message;
}

// The field report's hybrid: 64 layers, every 4th is attention (16 KV layers), 4 KV heads x 256.
TEST(GgufModel, HybridByFullAttentionInterval) {
  auto m = facts(testing::field_case_model());
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->count(LayerKind::kFullAttention), 16u);
  EXPECT_EQ(m->count(LayerKind::kRecurrent), 48u);
  EXPECT_EQ(m->layers[3].kind, LayerKind::kFullAttention);
  EXPECT_EQ(m->layers[4].kind, LayerKind::kRecurrent);
  EXPECT_EQ(m->layers[63].kind, LayerKind::kFullAttention);
  // n_embd_r + n_embd_s = (4 - 1) * (6144 + 2 * 16 * 128) + 128 * 6144.
  EXPECT_EQ(m->recurrent_state_elements, 3u * 10240u + 786432u);
  const KvFootprint fp8 = kv_footprint(*m, KvType::kFp8);
  EXPECT_EQ(fp8.bytes_per_token(), 32768.0);  // 32 KiB
  EXPECT_EQ(kv_footprint(*m, KvType::kF16).bytes_per_token(), 65536.0);
  EXPECT_EQ(fp8.state_bytes_per_sequence, 48u * 817152u * 4u);
}

TEST(GgufModel, IntervalDefaultsToFourForQwenHybrids) {
  GgufWriter w;
  w.str("general.architecture", "qwen3next")
      .u32("qwen3next.block_count", 8)
      .u32("qwen3next.attention.head_count", 16)
      .u32("qwen3next.attention.head_count_kv", 2)
      .u32("qwen3next.attention.key_length", 256)
      .u32("qwen3next.attention.value_length", 256)
      .u32("qwen3next.ssm.conv_kernel", 4)
      .u32("qwen3next.ssm.inner_size", 4096)
      .u32("qwen3next.ssm.state_size", 128)
      .u32("qwen3next.ssm.group_count", 16);
  auto m = facts(w);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(kinds(*m), (std::vector<LayerKind>{LayerKind::kRecurrent, LayerKind::kRecurrent,
                                               LayerKind::kRecurrent, LayerKind::kFullAttention,
                                               LayerKind::kRecurrent, LayerKind::kRecurrent,
                                               LayerKind::kRecurrent, LayerKind::kFullAttention}));
}

TEST(GgufModel, HybridByZeroKvHeads) {
  GgufWriter w;
  w.str("general.architecture", "jamba")
      .u32("jamba.block_count", 8)
      .u32("jamba.embedding_length", 4096)
      .u32("jamba.attention.head_count", 32)
      .u32_array("jamba.attention.head_count_kv", {0, 0, 0, 8, 0, 0, 0, 8})
      .u32("jamba.ssm.conv_kernel", 4)
      .u32("jamba.ssm.inner_size", 8192)
      .u32("jamba.ssm.state_size", 16)
      .u32("jamba.ssm.time_step_rank", 256);
  auto m = facts(w);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->count(LayerKind::kRecurrent), 6u);
  EXPECT_EQ(m->count(LayerKind::kFullAttention), 2u);
  // Mamba 1 has no groups: (4 - 1) * 8192 + 16 * 8192.
  EXPECT_EQ(m->recurrent_state_elements, 3u * 8192u + 16u * 8192u);
  EXPECT_EQ(kv_footprint(*m, KvType::kF16).bytes_per_token(), 2 * 8 * (128 + 128) * 2.0);
}

TEST(GgufModel, ZeroKvHeadsWithoutStateKeepNothing) {
  GgufWriter w = llama_like(4);
  w.u32_array("llama.attention.head_count_kv", {8, 0, 8, 0});
  auto m = facts(w);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->count(LayerKind::kNone), 2u);
  EXPECT_EQ(m->count(LayerKind::kRecurrent), 0u);
  ASSERT_EQ(m->notes.size(), 1u);
  EXPECT_NE(m->notes[0].find("keep no cache"), std::string::npos);
}

TEST(GgufModel, SlidingWindowPatternFromArchitecture) {
  GgufWriter w;
  w.str("general.architecture", "gemma3")
      .u32("gemma3.block_count", 12)
      .u32("gemma3.attention.head_count", 8)
      .u32("gemma3.attention.head_count_kv", 4)
      .u32("gemma3.attention.key_length", 256)
      .u32("gemma3.attention.value_length", 256)
      .u32("gemma3.attention.sliding_window", 1024);
  auto m = facts(w);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->sliding_window, 1024u);
  // llama.cpp's gemma3 pattern 6: five sliding layers, then one full.
  EXPECT_EQ(m->layers[4].kind, LayerKind::kSlidingAttention);
  EXPECT_EQ(m->layers[5].kind, LayerKind::kFullAttention);
  EXPECT_EQ(m->layers[11].kind, LayerKind::kFullAttention);
  EXPECT_EQ(m->count(LayerKind::kSlidingAttention), 10u);
  const KvFootprint kv = kv_footprint(*m, KvType::kF16);
  EXPECT_EQ(kv.full_bytes_per_token, 2 * 4 * 512 * 2.0);
  EXPECT_EQ(kv.sliding_bytes_per_token, 10 * 4 * 512 * 2.0);
  EXPECT_EQ(kv.bytes_per_sequence(32768), 8192.0 * 32768 + 40960.0 * 1024);
  EXPECT_EQ(kv.bytes_per_sequence(100), 49152.0 * 100);
}

TEST(GgufModel, SlidingWindowPatternFromTheFile) {
  GgufWriter scalar = llama_like(6);
  scalar.u32("llama.attention.sliding_window", 512)
      .u32("llama.attention.sliding_window_pattern", 3);
  auto s = facts(scalar);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(kinds(*s),
            (std::vector<LayerKind>{LayerKind::kSlidingAttention, LayerKind::kSlidingAttention,
                                    LayerKind::kFullAttention, LayerKind::kSlidingAttention,
                                    LayerKind::kSlidingAttention, LayerKind::kFullAttention}));

  GgufWriter array = llama_like(4);
  array.u32("llama.attention.sliding_window", 512)
      .array<uint8_t>("llama.attention.sliding_window_pattern", testing::kBool, {1, 0, 0, 1});
  auto a = facts(array);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(kinds(*a),
            (std::vector<LayerKind>{LayerKind::kSlidingAttention, LayerKind::kFullAttention,
                                    LayerKind::kFullAttention, LayerKind::kSlidingAttention}));
}

TEST(GgufModel, UnknownSlidingPatternCountsFullContext) {
  GgufWriter w = llama_like(4);
  w.u32("llama.attention.sliding_window", 4096);
  auto m = facts(w);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->count(LayerKind::kFullAttention), 4u);
  EXPECT_EQ(m->sliding_window, 0u);
  ASSERT_FALSE(m->notes.empty());
  EXPECT_NE(m->notes[0].find("upper bound"), std::string::npos);
}

TEST(GgufModel, MlaCachesOneLatentPerToken) {
  GgufWriter w;
  w.str("general.architecture", "deepseek2")
      .u32("deepseek2.block_count", 3)
      .u32("deepseek2.embedding_length", 2048)
      .u32("deepseek2.attention.head_count", 16)
      .u32("deepseek2.attention.head_count_kv", 1)
      .u32("deepseek2.attention.key_length", 576)
      .u32("deepseek2.attention.value_length", 512)
      .u32("deepseek2.attention.kv_lora_rank", 512)
      .u32("deepseek2.attention.key_length_mla", 192)
      .u32("deepseek2.attention.value_length_mla", 128)
      .u32("deepseek2.rope.dimension_count", 64);
  auto m = facts(w);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_TRUE(m->mla);
  EXPECT_EQ(kv_footprint(*m, KvType::kF16).bytes_per_token(), 3 * (512 + 64) * 2.0);

  // Converted before MLA support (no *_mla keys): llama.cpp caches full K and V per head.
  GgufWriter old;
  old.str("general.architecture", "deepseek2")
      .u32("deepseek2.block_count", 3)
      .u32("deepseek2.attention.head_count", 16)
      .u32("deepseek2.attention.head_count_kv", 16)
      .u32("deepseek2.attention.key_length", 192)
      .u32("deepseek2.attention.value_length", 128)
      .u32("deepseek2.attention.kv_lora_rank", 512);
  auto o = facts(old);
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_FALSE(o->mla);
  EXPECT_EQ(kv_footprint(*o, KvType::kF16).bytes_per_token(), 3 * 16 * (192 + 128) * 2.0);
}

class GgufSplitModel : public ::testing::Test {
 protected:
  // Three shards; the first carries the model's metadata, each holds one 64x64 f32 tensor.
  void write_shards(int count_on_disk, uint16_t second_split_no = 1) {
    for (int i = 0; i < count_on_disk; ++i) {
      GgufWriter w;
      if (i == 0) {
        w.str("general.architecture", "llama")
            .u32("llama.block_count", 2)
            .u32("llama.embedding_length", 64)
            .u32("llama.attention.head_count", 4)
            .scalar<int32_t>("split.tensors.count", testing::kI32, 3);
      }
      w.scalar<uint16_t>("split.no", testing::kU16, i == 1 ? second_split_no : uint16_t(i))
          .scalar<uint16_t>("split.count", testing::kU16, 3)
          .tensor("t" + std::to_string(i), {64, 64}, testing::kTypeF32);
      w.write(dir_ / ("Big-Model-Q4-0000" + std::to_string(i + 1) + "-of-00003.gguf"));
    }
  }
  testing::TempDir dir_;
};

TEST_F(GgufSplitModel, SumsEveryShardFromAnyShard) {
  write_shards(3);
  auto m = load_gguf_model(dir_ / "Big-Model-Q4-00002-of-00003.gguf");
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->files, 3u);
  EXPECT_EQ(m->weights_bytes, 3u * 64 * 64 * 4);
  EXPECT_EQ(m->layers.size(), 2u);
  EXPECT_EQ(m->name, "big-model-q4");
}

TEST_F(GgufSplitModel, NamesTheMissingShard) {
  write_shards(2);
  auto m = load_gguf_model(dir_ / "Big-Model-Q4-00001-of-00003.gguf");
  ASSERT_FALSE(m);
  EXPECT_TRUE(mentions(m.error(), "shard 3 of 3")) << m.error().message;
}

TEST_F(GgufSplitModel, RejectsAShardOutOfPlace) {
  write_shards(3, 2);
  auto m = load_gguf_model(dir_ / "Big-Model-Q4-00001-of-00003.gguf");
  ASSERT_FALSE(m);
  EXPECT_TRUE(mentions(m.error(), "split.no is not 1")) << m.error().message;
}

TEST_F(GgufSplitModel, RejectsASplitFileWithAnUnexpectedName) {
  write_shards(3);
  std::filesystem::copy_file(dir_ / "Big-Model-Q4-00001-of-00003.gguf", dir_ / "renamed.gguf");
  auto m = load_gguf_model(dir_ / "renamed.gguf");
  ASSERT_FALSE(m);
  EXPECT_TRUE(mentions(m.error(), "split into 3 files")) << m.error().message;
}

}  // namespace
}  // namespace switchyard::plan

namespace switchyard::plan {
namespace {

TEST(ShardName, ParsesLlamaCppSplitNames) {
  const auto shard = parse_shard_name("Qwen3-27B-Q4_K_M-00002-of-00003.gguf");
  ASSERT_TRUE(shard);
  EXPECT_EQ(shard->prefix, "Qwen3-27B-Q4_K_M");
  EXPECT_EQ(shard->index, 2u);
  EXPECT_EQ(shard->count, 3u);
  EXPECT_FALSE(parse_shard_name("model.gguf"));
  EXPECT_FALSE(parse_shard_name("-00001-of-00003.gguf"));
  EXPECT_FALSE(parse_shard_name("m-0001-of-00003.gguf"));
  EXPECT_FALSE(parse_shard_name("m-00001-of-0000x.gguf"));
  EXPECT_EQ(model_name_from_path("/x/Qwen3 27B-00001-of-00002.gguf"), "qwen3-27b");
  EXPECT_EQ(model_name_from_path("/x/qwen-27b/config.json"), "qwen-27b");
}

}  // namespace
}  // namespace switchyard::plan
