// The per-device breakdown and partial offload through run_plan, on a small GGUF whose tensors
// are named as llama.cpp names them.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <sstream>

#include "gguf_test_writer.h"
#include "plan/plan.h"

namespace switchyard::plan {
namespace {

namespace json = boost::json;
using testing::GgufWriter;
using testing::kTypeF32;

// 4 layers of one 256 x 256 f32 matrix (262,144 B each), token_embd and output of 256 x 1000
// f32 (1,024,000 B each); 4 query heads, 2 KV heads of 64: 2 x (64 + 64) x 2 B = 512 B per token
// per layer at f16.
class PlanDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    GgufWriter w;
    w.str("general.architecture", "llama")
        .u32("llama.block_count", 4)
        .u32("llama.context_length", 4096)
        .u32("llama.embedding_length", 256)
        .u32("llama.feed_forward_length", 512)
        .u32("llama.attention.head_count", 4)
        .u32("llama.attention.head_count_kv", 2)
        .tensor("token_embd.weight", {256, 1000}, kTypeF32);
    for (int i = 0; i < 4; ++i) {
      w.tensor("blk." + std::to_string(i) + ".attn_q.weight", {256, 256}, kTypeF32);
    }
    w.tensor("output.weight", {256, 1000}, kTypeF32);
    w.write(dir_ / "tiny.gguf");
  }

  PlanOptions options() const {
    PlanOptions o;
    o.model = (dir_ / "tiny.gguf").string();
    o.gpus = "1G";
    o.overhead = "0";
    o.context = 4096;
    o.json = true;
    return o;
  }

  json::object run_json(const PlanOptions& o, int expected = 0) const {
    std::ostringstream out, err;
    EXPECT_EQ(run_plan(o, out, err), expected) << err.str() << out.str();
    return json::parse(out.str()).as_object();
  }

  testing::TempDir dir_;
};

uint64_t u(const json::value& v) {
  return v.to_number<uint64_t>();
}

TEST_F(PlanDevices, PartialOffloadPutsTheFirstLayersInRam) {
  PlanOptions o = options();
  o.gpu_layers = 3;  // i_gpu_start = 4 + 1 - 3 = 2: layers 2, 3 and the output on the card
  const auto j = run_json(o);
  EXPECT_EQ(u(j.at("gpu_layers")), 3u);
  const auto& devices = j.at("devices").as_array();
  ASSERT_EQ(devices.size(), 2u);
  const auto& cpu = devices[0].as_object();
  const auto& gpu = devices[1].as_object();
  EXPECT_EQ(cpu.at("name").as_string(), "CPU");
  EXPECT_EQ(u(cpu.at("layers")), 2u);
  // token_embd 1,024,000 + 2 x 262,144 = 1,548,288 B; the card the same (output + 2 layers).
  EXPECT_EQ(u(cpu.at("weights_bytes")), 1548288u);
  EXPECT_EQ(u(gpu.at("layers")), 2u);
  EXPECT_TRUE(gpu.at("output_layer").as_bool());
  EXPECT_EQ(u(gpu.at("weights_bytes")), 1548288u);
  // KV: 512 B x 4096 tokens = 2 MiB per layer, two on each side.
  EXPECT_EQ(u(cpu.at("kv_bytes")), 4u << 20);
  EXPECT_EQ(u(gpu.at("kv_bytes")), 4u << 20);
  // Compute at 512 tokens with flash attention: attention 2 x 256 x 512 x 4 B (1 MiB) + Q and
  // output 4 x 128 x 512 x 4 B (1 MiB) + an f16 mask 4096 x 512 x 2 B (4 MiB) = 6 MiB beats the
  // FFN (2 x 256 + 2 x 512) x 512 x 4 B = 3 MiB and the logits (256 + 1000) x 512 x 4 B.
  EXPECT_EQ(u(gpu.at("compute_bytes")), 6u << 20);
  // The CPU: embeddings 256 x 512 x 4 B + the f32 mask 4096 x 512 x 4 B = 8,912,896 B, 4,000 B of
  // output buffer, and its own two layers' 6 MiB.
  EXPECT_EQ(u(cpu.at("compute_bytes")), 8912896u + 4000u + (6u << 20));
  EXPECT_EQ(u(gpu.at("usable_bytes")), 1u << 30);
  // The capacity plan counts the card's part only: 1 GiB - 1,548,288 B - 6 MiB of compute.
  EXPECT_EQ(u(j.at("topology").at("pool_bytes_per_instance")), (1u << 30) - 1548288u - (6u << 20));
  EXPECT_NE(std::string(j.at("commands").at("llamacpp").as_string()).find("-ngl 3 "),
            std::string::npos);
}

TEST_F(PlanDevices, FullOffloadKeepsOnlyTheEmbeddingsOnTheCpu) {
  PlanOptions o = options();
  o.gpus = "2x1G";
  o.tensor_parallel = 2;  // llama.cpp row split
  const auto j = run_json(o);
  const auto& devices = j.at("devices").as_array();
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_EQ(u(devices[0].at("weights_bytes")), 1024000u);
  EXPECT_EQ(u(devices[0].at("layers")), 0u);
  // Row split: 4 x 262,144 + 1,024,000 = 2,072,576 B halved on each card; all 8 MiB of KV and
  // the compute on GPU0.
  EXPECT_EQ(u(devices[1].at("weights_bytes")), 1036288u);
  EXPECT_EQ(u(devices[2].at("weights_bytes")), 1036288u);
  EXPECT_EQ(u(devices[1].at("kv_bytes")), 8u << 20);
  EXPECT_EQ(u(devices[2].at("kv_bytes")), 0u);
  EXPECT_EQ(u(devices[2].at("compute_bytes")), 0u);
  const auto& compute = j.at("compute").as_object();
  EXPECT_EQ(u(compute.at("n_tokens")), 512u);
  // Without flash attention: KQ 4 heads x 4096 x 512 x 4 B = 32 MiB + the f32 mask 8 MiB + four
  // 256 x 512 f32 activations (2 MiB) = 42 MiB.
  EXPECT_EQ(u(compute.at("layer_card_bytes_without_flash_attention")), 42u << 20);
  EXPECT_NE(std::string(j.at("commands").at("llamacpp").as_string()).find(" -fa on"),
            std::string::npos);
}

TEST_F(PlanDevices, ACardOverflowingOnItsOwnDoesNotFit) {
  // Row split keeps the whole cache on the main GPU: 2 x 8 MiB cards hold 16 MiB together, but
  // GPU0 alone must take the 8 MiB of KV and the compute buffers.
  PlanOptions o = options();
  o.gpus = "2x12M";
  o.tensor_parallel = 2;
  o.json = false;
  std::ostringstream out, err;
  EXPECT_EQ(run_plan(o, out, err), 1) << err.str();
  EXPECT_NE(out.str().find("row split keeps the whole KV cache"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("OVER"), std::string::npos) << out.str();
}

TEST_F(PlanDevices, TheTextTableAndTheAccuracyLine) {
  PlanOptions o = options();
  o.json = false;
  std::ostringstream out, err;
  ASSERT_EQ(run_plan(o, out, err), 0) << err.str();
  const std::string text = out.str();
  EXPECT_NE(text.find("Per device (one instance: 1 slot x 4,096 tokens, -ub 512)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("GPU0   4 + output"), std::string::npos) << text;
  EXPECT_NE(text.find("CPU    input"), std::string::npos) << text;
  EXPECT_NE(text.find("accuracy     the formula gives llama-server's logged buffers exactly"),
            std::string::npos)
      << text;
}

TEST_F(PlanDevices, BadOffloadFlags) {
  PlanOptions o = options();
  o.gpu_layers = 6;
  std::ostringstream out, err;
  EXPECT_EQ(run_plan(o, out, err), 2);
  EXPECT_NE(err.str().find("--ngl: must be from 1 to 5"), std::string::npos) << err.str();
  o.gpu_layers = 2;
  o.engine = "vllm";
  std::ostringstream out2, err2;
  EXPECT_EQ(run_plan(o, out2, err2), 2);
  EXPECT_NE(err2.str().find("--ngl: is llama.cpp's partial offload"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::plan
