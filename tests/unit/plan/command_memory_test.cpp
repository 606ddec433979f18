// The memory of an engine command against plan's own figures: the same model, context, slots,
// KV type and offload through run_plan must give the same bytes per card (plus llama.cpp's
// margin), and the split flags must move them between cards as llama.cpp does.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <cmath>
#include <sstream>

#include "../support.h"
#include "gguf_test_writer.h"
#include "plan/command_memory.h"
#include "plan/device_breakdown.h"
#include "plan/plan.h"

namespace switchyard::plan {
namespace {

using namespace switchyard::testing_support;

namespace json = boost::json;

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

CommandMemory estimate(const std::string& line, std::vector<uint64_t> cards = {24 * kGiB}) {
  auto m = estimate_command_memory(words(line), cards);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  return m.ok() ? *m : CommandMemory{};
}

std::string failure(const std::string& line, std::vector<uint64_t> cards = {24 * kGiB}) {
  auto m = estimate_command_memory(words(line), cards);
  return m.ok() ? "(no error)" : m.error().message;
}

// The first card's weights + KV + compute as `switchyard plan --json` reports them.
uint64_t plan_card_bytes(PlanOptions o, const std::string& model = kStories) {
  o.model = model;
  o.gpus = "24G";
  o.json = true;
  std::ostringstream out, err;
  EXPECT_EQ(run_plan(o, out, err), 0) << err.str();
  const auto j = json::parse(out.str()).as_object();
  const auto& gpu = j.at("devices").as_array().at(1).as_object();
  double total = 0;
  for (const char* k : {"weights_bytes", "kv_bytes", "compute_bytes"}) {
    total += gpu.at(k).to_number<double>();
  }
  return static_cast<uint64_t>(std::llround(total));
}

// Plan rounds each column to a byte; the estimate rounds the sum.
void expect_near_bytes(uint64_t got, uint64_t want) {
  EXPECT_LE(got > want ? got - want : want - got, 2u) << got << " vs " << want;
}

TEST(CommandMemory, LlamaServerMatchesPlanForTheSameContextAndSlots) {
  PlanOptions o;
  o.context = 1024;  // per sequence: -c 2048 over -np 2
  o.concurrency = 2;
  const auto m =
      estimate("llama-server -m " + std::string(kStories) + " -c 2048 -np 2 --port ${PORT}");
  ASSERT_EQ(m.per_gpu.size(), 1u);
  expect_near_bytes(m.per_gpu[0], plan_card_bytes(o) + kLlamaCppCardMargin);
  EXPECT_NE(m.source.find("stories260K.gguf"), std::string::npos) << m.source;
  EXPECT_NE(m.source.find("-c 2048 over 2 slot(s)"), std::string::npos) << m.source;
}

// stories260K's heads are 8 wide, too narrow for a quantized cache: a model with heads of 64
// (256 wide, 4 query heads, 2 KV heads), 4 layers.
std::string write_wide_heads_model(const testing::TempDir& dir) {
  testing::GgufWriter w;
  w.str("general.architecture", "llama")
      .u32("llama.block_count", 4)
      .u32("llama.context_length", 4096)
      .u32("llama.embedding_length", 256)
      .u32("llama.feed_forward_length", 512)
      .u32("llama.attention.head_count", 4)
      .u32("llama.attention.head_count_kv", 2)
      .tensor("token_embd.weight", {256, 1000}, testing::kTypeF32);
  for (int i = 0; i < 4; ++i) {
    w.tensor("blk." + std::to_string(i) + ".attn_q.weight", {256, 256}, testing::kTypeF32);
  }
  w.tensor("output.weight", {256, 1000}, testing::kTypeF32);
  const auto path = (dir / "wide.gguf").string();
  w.write(path);
  return path;
}

TEST(CommandMemory, KvCacheTypeAndPartialOffloadFollowPlan) {
  testing::TempDir dir;
  const std::string model = write_wide_heads_model(dir);
  PlanOptions o;
  o.context = 4096;
  o.kv_type = "q8_0";
  o.gpu_layers = 3;
  const auto m = estimate("/opt/llama/llama-server --model=" + model +
                          " --ctx-size=4096 -ctk q8_0 --cache-type-v q8_0 -ngl 3");
  expect_near_bytes(m.per_gpu.at(0), plan_card_bytes(o, model) + kLlamaCppCardMargin);
  // A mixed cache is counted at its larger type: here the f16 figure.
  PlanOptions f16 = o;
  f16.kv_type = "f16";
  const auto mixed = estimate("llama-server -m " + model + " -c 4096 -ctk q8_0 -ctv f16 -ngl 3");
  expect_near_bytes(mixed.per_gpu.at(0), plan_card_bytes(f16, model) + kLlamaCppCardMargin);
  EXPECT_GT(mixed.per_gpu[0], m.per_gpu[0]);
}

TEST(CommandMemory, AQuantizedCacheTooNarrowForTheHeadsIsRefusedAsPlanRefusesIt) {
  EXPECT_EQ(failure("llama-server -m " + std::string(kStories) + " -ctk q4_0"),
            "-ctk: q4_0 needs head dimensions that are multiples of 32; this model's are 8");
  EXPECT_EQ(failure("llama-server -m " + std::string(kStories) + " --cache-type-v q8_0"),
            "-ctv: q8_0 needs head dimensions that are multiples of 32; this model's are 8");
}

TEST(CommandMemory, ContextDefaultsToTheModelsTrainedContext) {
  const auto given = estimate("llama-server -m " + std::string(kStories) + " -c 32");
  const auto defaulted = estimate("llama-server -m " + std::string(kStories));
  EXPECT_NE(defaulted.source.find("-c the model's"), std::string::npos) << defaulted.source;
  const auto zero = estimate("llama-server -m " + std::string(kStories) + " -c 0");
  EXPECT_EQ(zero.per_gpu, defaulted.per_gpu);
  EXPECT_NE(given.per_gpu, defaulted.per_gpu);
}

TEST(CommandMemory, SplitFlagsMoveTheModelBetweenCards) {
  const std::vector<uint64_t> two = {24 * kGiB, 24 * kGiB};
  const std::string base = "llama-server -m " + std::string(kStories) + " -c 4096";
  const auto one_card = estimate(base);
  // -sm none: everything on the main GPU, nothing on the other (not even a runtime context).
  EXPECT_EQ(estimate(base + " -sm none -mg 1", two).per_gpu,
            (std::vector<uint64_t>{0, one_card.per_gpu[0]}));
  EXPECT_EQ(estimate(base + " -sm none", two).per_gpu,
            (std::vector<uint64_t>{one_card.per_gpu[0], 0}));
  // A share of 0 is the same as not using the card.
  EXPECT_EQ(estimate(base + " -ts 1,0", two).per_gpu, estimate(base + " -sm none", two).per_gpu);
  // Layer split: the larger share holds more.
  const auto front = estimate(base + " -ts 3,1", two).per_gpu;
  const auto back = estimate(base + " --tensor-split 1/3", two).per_gpu;
  EXPECT_GT(front[0], front[1]);
  EXPECT_LT(back[0], back[1]);
  // Row split keeps the cache on the main GPU.
  const auto row = estimate(base + " -sm row", two).per_gpu;
  EXPECT_GT(row[0], row[1]);
}

TEST(CommandMemory, VllmTakesItsUtilizationOfEachCard) {
  const std::vector<uint64_t> cards = {24 * kGiB, 16 * kGiB};
  EXPECT_EQ(estimate("vllm serve Qwen/Qwen3-8B --gpu-memory-utilization 0.5 -tp 2", cards).per_gpu,
            (std::vector<uint64_t>{12 * kGiB, 8 * kGiB}));
  const auto fallback =
      estimate("python3 -m vllm.entrypoints.openai.api_server --model x", {10 * kGiB});
  EXPECT_EQ(fallback.per_gpu, std::vector<uint64_t>{9 * kGiB});
  EXPECT_NE(fallback.source.find("0.9 (its default)"), std::string::npos) << fallback.source;
  EXPECT_NE(failure("vllm serve x", {0}).find("GPU #0 is unknown"), std::string::npos);
  EXPECT_NE(failure("vllm serve x --gpu-memory-utilization 1.5").find("not in (0, 1]"),
            std::string::npos);
}

TEST(CommandMemory, BadCommandsSayWhichFlag) {
  const std::string m = "llama-server -m " + std::string(kStories);
  EXPECT_NE(failure("switchyard sim --port 1").find("neither llama-server nor vllm"),
            std::string::npos);
  EXPECT_NE(failure("llama-server -hf org/model").find("-m: not given"), std::string::npos);
  EXPECT_NE(failure("llama-server -m /nonexistent.gguf").find("-m: "), std::string::npos);
  EXPECT_NE(failure(m + " -c lots").find("-c: 'lots' is not a number"), std::string::npos);
  EXPECT_NE(failure(m + " -np 0").find("-np: 0"), std::string::npos);
  EXPECT_NE(failure(m + " -ctk f32").find("-ctk: cache type 'f32'"), std::string::npos);
  EXPECT_NE(failure(m + " -sm diagonal").find("-sm: 'diagonal'"), std::string::npos);
  EXPECT_NE(failure(m + " -mg 1").find("-mg: GPU 1 of an instance with 1 GPU(s)"),
            std::string::npos);
  EXPECT_NE(failure(m + " -ts 1,1").find("-ts: '1,1'"), std::string::npos);
  EXPECT_NE(failure(m + " -ts 0").find("-ts: '0'"), std::string::npos);
  EXPECT_NE(failure(m + " -ub 0").find("-ub: 0"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::plan
