#include "plan/plan.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <fstream>
#include <sstream>

#include "../support.h"
#include "gguf_test_writer.h"

namespace switchyard::plan {
namespace {

using namespace switchyard::testing_support;

namespace json = boost::json;

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome run(const PlanOptions& options) {
  std::ostringstream out, err;
  const int code = run_plan(options, out, err);
  return {code, out.str(), err.str()};
}

json::object run_json(PlanOptions options, int expected_code) {
  options.json = true;
  const Outcome r = run(options);
  EXPECT_EQ(r.code, expected_code) << r.err << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
  return json::parse(r.out).as_object();
}

double number(const json::value& v) {
  return v.to_number<double>();
}

PlanOptions stories() {
  PlanOptions o;
  o.model = kStories;
  o.gpus = "4x32G";
  return o;
}

// One line on stderr naming the flag, nothing on stdout, exit 2.
void expect_bad_input(const PlanOptions& options, const std::string& flag,
                      const std::string& detail) {
  const Outcome r = run(options);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(r.out.empty());
  EXPECT_EQ(r.err.find("switchyard plan: " + flag + ": "), 0u) << r.err;
  EXPECT_NE(r.err.find(detail), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(PlanRun, Stories260KFitsOnePerCard) {
  const Outcome text = run(stories());
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("640 B = 5 layers x 4 heads x (8 + 8) x 2 B"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("FITS"), std::string::npos);

  const json::object j = run_json(stories(), 0);
  EXPECT_EQ(j.at("fits").as_bool(), true);
  EXPECT_EQ(number(j.at("kv_bytes_per_token")), 640.0);
  EXPECT_EQ(j.at("context").to_number<uint64_t>(), 2048u);  // min(trained 2048, 32768)
  EXPECT_EQ(number(j.at("bytes_per_sequence")), 640.0 * 2048);
  EXPECT_EQ(j.at("model").at("layers").to_number<uint64_t>(), 5u);
  EXPECT_EQ(j.at("model").at("weights_bytes").to_number<uint64_t>(), 1171200u);
  EXPECT_EQ(j.at("topology").at("layout").as_string(), "replicas");
  EXPECT_EQ(j.at("topology").at("instances").to_number<uint64_t>(), 4u);
  const std::string llamacpp(j.at("commands").at("llamacpp").as_string());
  EXPECT_NE(llamacpp.find("-c 2048 -np 1 --split-mode none"), std::string::npos) << llamacpp;
  const std::string yaml(j.at("fleet_yaml").as_string());
  EXPECT_NE(yaml.find("  - name: gpu3\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("env: {HIP_VISIBLE_DEVICES: \"3\"}"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("aliases: [default]"), std::string::npos);
}

class PlanFieldCase : public ::testing::Test {
 protected:
  void SetUp() override { testing::field_case_model().write(dir_ / "hybrid-27b.gguf"); }

  PlanOptions options() const {
    PlanOptions o;
    o.model = (dir_ / "hybrid-27b.gguf").string();
    o.gpus = "4x32G";
    o.engine = "vllm";
    o.kv_type = "fp8";
    o.context = 180000;
    o.concurrency = 24;
    return o;
  }

  testing::TempDir dir_;
};

// 16 KV layers x 4 heads x 256 dims: 32 KiB/token at fp8, 180000 x 24 x 32 KiB ~ 132 GiB of KV,
// more than 4 x 32 GiB.
TEST_F(PlanFieldCase, DoesNotFitFourCards) {
  const json::object j = run_json(options(), 1);
  EXPECT_EQ(j.at("fits").as_bool(), false);
  EXPECT_EQ(number(j.at("kv_bytes_per_token")), 32768.0);
  const double state = number(j.at("state_bytes_per_sequence"));
  EXPECT_EQ(state, 48.0 * 817152 * 4);
  const double kv_only = number(j.at("bytes_needed")) - 24 * state;
  EXPECT_NEAR(kv_only / kGiB, 131.8, 0.05);
  EXPECT_GT(kv_only, 128 * kGiB);
  EXPECT_EQ(j.at("topology").at("gpus_per_instance").to_number<uint64_t>(), 4u);
  EXPECT_LT(j.at("topology").at("max_sequences").to_number<uint64_t>(), 24u);
  EXPECT_LT(j.at("max_context").to_number<uint64_t>(), 180000u);

  const Outcome text = run(options());
  EXPECT_EQ(text.code, 1);
  EXPECT_NE(text.out.find("DOES NOT FIT"), std::string::npos);
  EXPECT_NE(text.out.find("32.0 KiB = 16 layers x 4 heads x (256 + 256) x 1 B"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("num_preemptions_total"), std::string::npos);
}

TEST_F(PlanFieldCase, SixtyFourKibPerTokenAtF16AndDefaultContext) {
  PlanOptions o = options();
  o.kv_type = "f16";
  o.context.reset();
  o.concurrency = 1;
  const json::object j = run_json(o, 0);
  EXPECT_EQ(number(j.at("kv_bytes_per_token")), 65536.0);
  EXPECT_EQ(j.at("context").to_number<uint64_t>(), 32768u);  // min(trained 262144, 32768)
}

TEST_F(PlanFieldCase, TensorParallelStatesItsCost) {
  PlanOptions o = options();
  o.context = 32768;
  o.concurrency = 4;
  o.tensor_parallel = 2;
  const json::object j = run_json(o, 0);
  EXPECT_EQ(j.at("topology").at("layout").as_string(), "tensor_parallel");
  const std::string vllm(j.at("commands").at("vllm").as_string());
  EXPECT_NE(vllm.find("--tensor-parallel-size 2"), std::string::npos) << vllm;
  EXPECT_NE(vllm.find("--kv-cache-dtype fp8"), std::string::npos) << vllm;
  EXPECT_EQ(j.at("commands").at("llamacpp"), nullptr);  // llama.cpp has no fp8 cache
  const std::string advice = json::serialize(j.at("advice"));
  EXPECT_NE(advice.find("two all-reduces per layer per token (128 sync points"), std::string::npos)
      << advice;
  EXPECT_NE(advice.find("switchyard doctor"), std::string::npos);
  EXPECT_NE(advice.find("Without --tp"), std::string::npos);
}

TEST(PlanRun, LayerSplitAcrossTheFewestCards) {
  PlanOptions o = stories();
  o.weights_size = "40G";
  const json::object j = run_json(o, 0);
  EXPECT_EQ(j.at("topology").at("layout").as_string(), "layer_split");
  EXPECT_EQ(j.at("topology").at("gpus_per_instance").to_number<uint64_t>(), 2u);
  const std::string llamacpp(j.at("commands").at("llamacpp").as_string());
  EXPECT_NE(llamacpp.find("--split-mode layer --tensor-split 1,1"), std::string::npos);
  const std::string yaml(j.at("fleet_yaml").as_string());
  EXPECT_NE(yaml.find("name: gpu2-3"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("HIP_VISIBLE_DEVICES: \"2,3\""), std::string::npos) << yaml;
}

TEST(PlanRun, GibAndGbAreDifferentCards) {
  // 10^9 bytes of weights and no overhead: a 1 GiB card has ~70 MiB left, a 1 GB card nothing.
  PlanOptions o = stories();
  o.weights_size = "1GB";
  o.overhead = "0G";
  o.gpus = "1x1G";
  const json::object gib = run_json(o, 0);
  EXPECT_EQ(gib.at("gpu_bytes").to_number<uint64_t>(), uint64_t{1} << 30);
  o.gpus = "1x1GB";
  const json::object gb = run_json(o, 1);
  EXPECT_EQ(gb.at("gpu_bytes").to_number<uint64_t>(), 1'000'000'000u);
  EXPECT_EQ(gb.at("fits").as_bool(), false);
}

TEST(PlanRun, QuantizedCacheFlags) {
  testing::TempDir dir;
  testing::GgufWriter w;
  w.str("general.architecture", "llama")
      .u32("llama.block_count", 4)
      .u32("llama.context_length", 8192)
      .u32("llama.embedding_length", 1024)
      .u32("llama.attention.head_count", 8)
      .u32("llama.attention.head_count_kv", 2)
      .tensor("token_embd.weight", {1024, 256}, testing::kTypeQ4_K)
      .write(dir / "m.gguf");
  PlanOptions o;
  o.model = (dir / "m.gguf").string();
  o.gpus = "1x8G";
  o.kv_type = "q8_0";
  const json::object j = run_json(o, 0);
  EXPECT_EQ(number(j.at("kv_bytes_per_token")), 4 * 2 * 256 * 1.0625);
  EXPECT_EQ(j.at("model").at("weights_bytes").to_number<uint64_t>(), 1024u * 256 / 256 * 144);
  const std::string llamacpp(j.at("commands").at("llamacpp").as_string());
  EXPECT_NE(llamacpp.find("-ctk q8_0 -ctv q8_0 -fa on"), std::string::npos) << llamacpp;
  EXPECT_EQ(j.at("commands").at("vllm"), nullptr);
}

TEST(PlanRun, ConfigJsonWithSafetensorsIndex) {
  testing::TempDir dir;
  testing::write_text(dir / "config.json", R"({"model_type": "llama", "num_hidden_layers": 32,
    "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
    "max_position_embeddings": 131072})");
  testing::write_text(dir / "model.safetensors.index.json",
                      R"({"metadata": {"total_size": 16060522496}})");
  PlanOptions o;
  o.model = dir.path().string();
  o.gpus = "2x24GB";
  o.engine = "vllm";
  o.concurrency = 4;
  const json::object j = run_json(o, 0);
  EXPECT_EQ(number(j.at("kv_bytes_per_token")), 131072.0);
  EXPECT_EQ(j.at("context").to_number<uint64_t>(), 32768u);
  EXPECT_EQ(j.at("model").at("format").as_string(), "hf-config");
  const std::string vllm(j.at("commands").at("vllm").as_string());
  EXPECT_NE(vllm.find("vllm serve " + dir.path().string()), std::string::npos) << vllm;
}

TEST(PlanRun, BadInputExitsTwoNamingTheFlag) {
  PlanOptions o = stories();
  o.model = "/nonexistent/model.gguf";
  expect_bad_input(o, "--model", "is not a file, nor in the built-in catalog");

  o = stories();
  o.gpus = "4x32";
  expect_bad_input(o, "--gpus", "needs a unit");
  o.gpus = "";
  expect_bad_input(o, "--gpus", "required");

  o = stories();
  o.engine = "tgi";
  expect_bad_input(o, "--engine", "'tgi'");

  o = stories();
  o.kv_type = "fp8";
  expect_bad_input(o, "--kv-type", "llama.cpp");
  o.kv_type = "q8_0";  // stories260K's heads are 8 wide
  expect_bad_input(o, "--kv-type", "multiples of 32");
  o.kv_type = "q4_0";
  o.engine = "vllm";
  expect_bad_input(o, "--kv-type", "vLLM");

  o = stories();
  o.concurrency = 0;
  expect_bad_input(o, "--concurrency", "from 1");
  o = stories();
  o.tensor_parallel = 5;
  expect_bad_input(o, "--tp", "(4)");
  o = stories();
  o.context = 0;
  expect_bad_input(o, "--context", "from 1");
  o = stories();
  o.engine = "vllm";
  o.gpu_memory_utilization = 1.5;
  expect_bad_input(o, "--gpu-memory-utilization", "(0, 1]");
  o = stories();
  o.overhead = "lots";
  expect_bad_input(o, "--overhead", "'lots'");
  o = stories();
  o.weights_size = "12";
  expect_bad_input(o, "--weights-size", "needs a unit");
}

TEST(PlanRun, ContextBeyondTheTrainedOneIsAWarning) {
  PlanOptions o = stories();
  o.context = 4096;  // stories260K was trained at 2048
  const Outcome r = run(o);
  EXPECT_EQ(r.code, 0) << r.err;
  const auto warnings = r.out.find("\nWarnings\n");
  ASSERT_NE(warnings, std::string::npos) << r.out;
  EXPECT_LT(warnings, r.out.find("\nAdvice\n"));
  EXPECT_NE(r.out.find("! --context 4096 is beyond the trained context of 2048 tokens"),
            std::string::npos)
      << r.out;
  const json::object j = run_json(o, 0);
  ASSERT_EQ(j.at("warnings").as_array().size(), 1u);
  o.context = 2048;
  EXPECT_TRUE(run_json(o, 0).at("warnings").as_array().empty());
}

// Weights larger than the box: a size, not a negative byte count; commands marked.
TEST(PlanRun, WeightsBeyondTheBoxNameTheExcessAndMarkTheCommands) {
  PlanOptions o = stories();
  o.gpus = "2x24G";
  o.weights_size = "275G";
  o.overhead = "0";
  const Outcome r = run(o);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("KV pool      none: the weights alone exceed the GPUs by 227.0 GiB"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("KV pool      -"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("llama.cpp, per instance - DOES NOT FIT as planned: not ready to paste"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Fleet config (llamacpp) - DOES NOT FIT"), std::string::npos);
  EXPECT_EQ(run_json(o, 1).at("commands_ready").as_bool(), false);
  EXPECT_EQ(run_json(stories(), 0).at("commands_ready").as_bool(), true);
}

TEST(PlanRun, MixedCards) {
  PlanOptions o = stories();
  o.gpus = "24G,32G";
  o.weights_size = "30G";
  o.overhead = "0";
  const json::object j = run_json(o, 0);
  EXPECT_EQ(j.at("gpus").to_number<uint64_t>(), 2u);
  ASSERT_EQ(j.at("gpu_bytes_each").as_array().size(), 2u);
  EXPECT_EQ(j.at("topology").at("layout").as_string(), "layer_split");
  // llama.cpp's layer split follows each card's memory: 56 - 30 GiB, less the compute buffers of
  // the two cards (one holds the output layer).
  const auto& compute = j.at("compute").as_object();
  const double buffers =
      number(compute.at("output_card_bytes")) + number(compute.at("layer_card_bytes"));
  EXPECT_NEAR(number(j.at("topology").at("pool_bytes_per_instance")), 26 * kGiB - buffers, 1);
  // 6 GiB per layer (no tensor list with --weights-size); split points 32/56 = 0.571 and 1:
  // layer il goes where il / 6 falls, so layers 0-3 (0, 0.17, 0.33, 0.5) take 24 GiB of the
  // 32 GiB card, layer 4 (0.67) and the output slot (0.83) the 24 GiB one.
  const auto& devices = j.at("devices").as_array();
  EXPECT_EQ(devices[1].at("layers").to_number<uint64_t>(), 4u);
  EXPECT_EQ(devices[2].at("layers").to_number<uint64_t>(), 1u);
  EXPECT_TRUE(devices[2].at("output_layer").as_bool());
  EXPECT_NEAR(number(devices[1].at("weights_bytes")), 24 * kGiB, 1);
  const Outcome r = run(o);
  EXPECT_NE(r.out.find("Memory (llamacpp, 1 x 32.0 GiB + 1 x 24.0 GiB)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("--split-mode layer --tensor-split 32,24"), std::string::npos) << r.out;
  // vLLM splits evenly: the 24 GiB card bounds both, 48 - 30 GiB.
  o.engine = "vllm";
  o.gpu_memory_utilization = 1.0;
  const json::object v = run_json(o, 0);
  EXPECT_NEAR(number(v.at("topology").at("pool_bytes_per_instance")) / kGiB, 18, 1e-9);
}

TEST(PlanRun, CatalogModelsNeedNoFile) {
  PlanOptions o;
  o.model = "qwen3-32b";
  o.gpus = "2x32G";
  o.context = 32768;
  expect_bad_input(o, "--weights-size", "catalog model");
  o.weights_size = "20G";
  const json::object j = run_json(o, 0);
  EXPECT_EQ(j.at("model").at("format").as_string(), "catalog");
  EXPECT_EQ(j.at("model").at("layers").to_number<uint64_t>(), 64u);
  EXPECT_EQ(j.at("model").at("trained_context").to_number<uint64_t>(), 40960u);
  // 64 layers x 8 heads x (128 + 128) x 2 B.
  EXPECT_EQ(number(j.at("kv_bytes_per_token")), 64.0 * 8 * 256 * 2);
  o.engine = "vllm";
  const json::object v = run_json(o, 0);
  EXPECT_NE(std::string(v.at("commands").at("vllm").as_string()).find("vllm serve Qwen/Qwen3-32B"),
            std::string::npos)
      << v.at("commands").at("vllm");

  o = PlanOptions{};
  o.gpus = "4x32G";
  o.weights_size = "40G";
  o.model = "llama-3.1-70b";
  EXPECT_EQ(number(run_json(o, 0).at("kv_bytes_per_token")), 80.0 * 8 * 256 * 2);
  o.model = "qwen3-next-80b-a3b";
  const json::object next = run_json(o, 0);
  EXPECT_EQ(next.at("model").at("full_attention_layers").to_number<uint64_t>(), 12u);
  EXPECT_EQ(next.at("model").at("recurrent_layers").to_number<uint64_t>(), 36u);
  o.model = "qwen9-1t";
  expect_bad_input(o, "--model", "qwen3-32b, llama-3.1-70b, qwen3-next-80b-a3b");
}

TEST(PlanRun, MalformedModelFilesExitTwo) {
  testing::TempDir dir;
  // The stories260K header without its weights.
  std::ifstream in(kStories, std::ios::binary);
  std::string head(14176, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  testing::write_text(dir / "truncated.gguf", head);
  testing::write_text(dir / "magic.gguf", "GGML" + head.substr(4));
  testing::write_text(dir / "empty.gguf", "");
  testing::Bytes absurd;
  testing::put_bytes(absurd, "GGUF", 4);
  testing::put<uint32_t>(absurd, 3);
  testing::put<uint64_t>(absurd, ~0ull);
  testing::put<uint64_t>(absurd, ~0ull);
  testing::write_text(dir / "absurd.gguf",
                      std::string(reinterpret_cast<const char*>(absurd.data()), absurd.size()));
  testing::write_text(dir / "config.json", R"({"num_hidden_layers": 2, "hidden_size": 64,
    "num_attention_heads": 4})");

  PlanOptions o = stories();
  o.model = (dir / "truncated.gguf").string();
  expect_bad_input(o, "--model", "truncated");
  o.model = (dir / "magic.gguf").string();
  expect_bad_input(o, "--model", "magic");
  o.model = (dir / "empty.gguf").string();
  expect_bad_input(o, "--model", "not a GGUF file");
  o.model = (dir / "absurd.gguf").string();
  expect_bad_input(o, "--model", "metadata count");
  o.model = (dir / "config.json").string();
  expect_bad_input(o, "--weights-size", "is required");
}

}  // namespace
}  // namespace switchyard::plan
