// The `plan` verb's flags reach run_plan: parse a command line the way main.cpp does and run it.
#include <gtest/gtest.h>
#include <CLI/CLI.hpp>

#include <boost/json.hpp>

#include <vector>

#include "../support.h"
#include "cli/command.h"

namespace switchyard::cli {
namespace {

using namespace switchyard::testing_support;

struct Parsed {
  CLI::App app{"test", "switchyard"};
  Command plan = add_plan_command(app);

  void parse(std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());  // CLI11 takes the vector reversed
    app.parse(args);
  }
};

TEST(PlanCommand, MapsFlagsAndRuns) {
  Parsed p;
  p.parse({"plan", "--model", kStories, "--gpus", "2x8GB", "--context", "1024", "--concurrency",
           "3", "--engine", "vllm", "--gpu-memory-utilization", "0.8", "--json"});
  ASSERT_TRUE(p.plan.app->parsed());
  ::testing::internal::CaptureStdout();
  const int code = p.plan.run();
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(code, 0);
  const auto j = boost::json::parse(out).as_object();
  EXPECT_EQ(j.at("gpus").to_number<uint64_t>(), 2u);
  EXPECT_EQ(j.at("gpu_bytes").to_number<uint64_t>(), 8'000'000'000u);
  EXPECT_EQ(j.at("context").to_number<uint64_t>(), 1024u);
  EXPECT_EQ(j.at("concurrency").to_number<uint64_t>(), 3u);
  EXPECT_EQ(j.at("engine").as_string(), "vllm");
  EXPECT_EQ(j.at("memory_fraction").as_double(), 0.8);
}

TEST(PlanCommand, MissingRequiredFlagIsAParseError) {
  Parsed p;
  EXPECT_THROW(p.parse({"plan", "--model", kStories}), CLI::RequiredError);
  Parsed q;
  EXPECT_THROW(q.parse({"plan", "--model", kStories, "--gpus", "4x32G", "--concurrency", "many"}),
               CLI::ParseError);
}

TEST(PlanCommand, BadValueExitsTwo) {
  Parsed p;
  p.parse({"plan", "--model", kStories, "--gpus", "4x32G", "--kv-type", "int3"});
  ::testing::internal::CaptureStderr();
  const int code = p.plan.run();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 2);
  EXPECT_NE(err.find("--kv-type"), std::string::npos) << err;
}

// --gpu r9700: the memory comes from the card (a bare count), and doctor's gfx1201 issue turns a
// vLLM tensor-parallel plan into one that will fail, with llama.cpp's layer split as the way out.
TEST(PlanCommand, GpuModelBringsDoctorsKnownIssue) {
  Parsed p;
  p.parse({"plan", "--model", kStories, "--gpus", "2", "--gpu", "r9700", "--engine", "vllm", "--tp",
           "2", "--json"});
  ::testing::internal::CaptureStdout();
  const int code = p.plan.run();
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(code, 0);  // it fits; it will not run
  const auto j = boost::json::parse(out).as_object();
  EXPECT_EQ(j.at("gpu_bytes").to_number<uint64_t>(), 32ull << 30);
  EXPECT_EQ(j.at("gpu_model").as_string(), "r9700");
  EXPECT_FALSE(j.at("commands_ready").as_bool());
  const auto& warnings = j.at("warnings").as_array();
  ASSERT_EQ(warnings.size(), 2u) << out;
  EXPECT_NE(std::string(warnings[0].as_string()).find("vllm-tp-gfx1201"), std::string::npos);
  EXPECT_NE(std::string(warnings[0].as_string()).find("vllm-project/vllm#40980"),
            std::string::npos);
  EXPECT_NE(
      std::string(warnings[1].as_string()).find("With --engine llamacpp the same request fits"),
      std::string::npos)
      << warnings[1];

  // The same on NVIDIA cards: no issue, no AMD atomics sentence.
  Parsed q;
  q.parse({"plan", "--model", kStories, "--gpus", "2", "--gpu", "4090", "--engine", "vllm", "--tp",
           "2", "--json"});
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(q.plan.run(), 0);
  const auto k = boost::json::parse(::testing::internal::GetCapturedStdout()).as_object();
  EXPECT_TRUE(k.at("commands_ready").as_bool());
  EXPECT_TRUE(k.at("warnings").as_array().empty());
  EXPECT_EQ(boost::json::serialize(k.at("advice")).find("On AMD"), std::string::npos);
}

// A single-card layout runs no collectives: no warning even on gfx1201.
TEST(PlanCommand, GpuModelIssueOnlyWhereItChangesTheAdvice) {
  Parsed p;
  p.parse(
      {"plan", "--model", kStories, "--gpus", "2", "--gpu", "r9700", "--engine", "vllm", "--json"});
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(p.plan.run(), 0);
  const auto j = boost::json::parse(::testing::internal::GetCapturedStdout()).as_object();
  EXPECT_EQ(j.at("topology").at("layout").as_string(), "replicas");
  EXPECT_TRUE(j.at("warnings").as_array().empty());
  EXPECT_TRUE(j.at("commands_ready").as_bool());

  Parsed q;
  q.parse({"plan", "--model", kStories, "--gpus", "2", "--gpu", "a100"});
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(q.plan.run(), 2);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("--gpu: 'a100' is not a card"),
            std::string::npos);
}

}  // namespace
}  // namespace switchyard::cli
