// The `plan` verb's flags reach run_plan: parse a command line the way main.cpp does and run it.
#include <gtest/gtest.h>
#include <CLI/CLI.hpp>

#include <boost/json.hpp>

#include <vector>

#include "cli/command.h"

namespace switchyard::cli {
namespace {

const char* const kStories = SWITCHYARD_SHARED_DIR "/models/stories260K.gguf";

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

}  // namespace
}  // namespace switchyard::cli
