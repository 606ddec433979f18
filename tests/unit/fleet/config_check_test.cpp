#include "fleet/config_check.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace switchyard::fleet {
namespace {

namespace fs = std::filesystem;

config::FleetConfig with_commands(std::initializer_list<const char*> commands) {
  config::FleetConfig c;
  int i = 0;
  for (const char* command : commands) {
    config::InstanceConfig inst;
    inst.name = "gpu" + std::to_string(i++);
    inst.model = "m";
    inst.command = command;
    c.instances.push_back(inst);
  }
  return c;
}

class MissingExecutables : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("config_check_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    const auto engine = dir_ / "fake-engine";
    std::ofstream(engine) << "#!/bin/sh\n";
    fs::permissions(engine, fs::perms::owner_all);
    std::ofstream(dir_ / "not-executable") << "data\n";
    old_path_ = std::getenv("PATH") ? std::getenv("PATH") : "";
    setenv("PATH", (dir_.string() + ":/usr/bin:/bin").c_str(), 1);
  }
  void TearDown() override {
    setenv("PATH", old_path_.c_str(), 1);
    fs::remove_all(dir_);
  }
  fs::path dir_;
  std::string old_path_;
};

TEST_F(MissingExecutables, FindsProgramsOnPathAndTheSelfPath) {
  const auto c = with_commands({"fake-engine --port ${PORT}", "${SWITCHYARD} sim --port ${PORT}",
                                "HIP_VISIBLE_DEVICES=0 exec fake-engine --port ${PORT} | tee log"});
  EXPECT_TRUE(missing_executables(c, (dir_ / "fake-engine").string()).empty());
}

TEST_F(MissingExecutables, NamesTheInstanceAndTheProgram) {
  const auto c = with_commands(
      {"fake-engine", "llama-server-typo --port ${PORT}", "A=1 vllm-typo serve x && true"});
  const auto problems = missing_executables(c, "/bin/true");
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0], "instances[1] (gpu1): command: 'llama-server-typo' is not found on PATH");
  EXPECT_EQ(problems[1], "instances[2] (gpu2): command: 'vllm-typo' is not found on PATH");
}

TEST_F(MissingExecutables, AFileThatIsNotExecutableOrASelfPathThatIsGone) {
  const auto path = (dir_ / "not-executable").string();
  const auto c = with_commands({path.c_str(), "${SWITCHYARD} sim"});
  const auto problems = missing_executables(c, (dir_ / "gone").string());
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("is not an executable file"), std::string::npos) << problems[0];
  EXPECT_NE(problems[1].find("/gone' is not an executable file"), std::string::npos) << problems[1];
}

// serve runs these under /bin/sh -c, where ulimit, cd and [ are the shell's own.
TEST_F(MissingExecutables, JudgesAShellCommandAsTheShellRunsIt) {
  const auto c =
      with_commands({"ulimit -n 4096; exec fake-engine --port ${PORT}",
                     "cd /tmp && HIP_VISIBLE_DEVICES=0 exec fake-engine --port ${PORT} >log 2>&1",
                     "if [ -x /x ]; then exec fake-engine; else exec engine-typo; fi",
                     "ulimit -n 4096; exec llama-server-typo --port ${PORT}",
                     "for i in 1 2; do :; done; fake-engine & wait"});
  const auto problems = missing_executables(c, "/bin/true");
  ASSERT_EQ(problems.size(), 2u) << ::testing::PrintToString(problems);
  EXPECT_EQ(problems[0], "instances[2] (gpu2): command: 'engine-typo' is not found on PATH");
  EXPECT_EQ(problems[1], "instances[3] (gpu3): command: 'llama-server-typo' is not found on PATH");
}

TEST_F(MissingExecutables, LeavesWhatTheShellExpandsAndUrlInstances) {
  auto c = with_commands({"$ENGINE --port ${PORT}", "\"quoted engine\" --port 1"});
  config::InstanceConfig remote;
  remote.name = "remote";
  remote.model = "m";
  remote.url = "http://127.0.0.1:9";
  c.instances.push_back(remote);
  EXPECT_TRUE(missing_executables(c, "/bin/true").empty());
}

TEST(FleetConfigMetricsInterval, DefaultsToFiveSecondsAndIsValidated) {
  const char* base = "instances:\n  - {model: m, url: http://127.0.0.1:9}\n";
  auto c = config::parse_fleet_config(base, "t.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->health.metrics_interval, std::chrono::seconds(5));
  c = config::parse_fleet_config(std::string(base) + "health: {metrics_interval: 250ms}\n",
                                 "t.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->health.metrics_interval, std::chrono::milliseconds(250));
  c = config::parse_fleet_config(std::string(base) + "health:\n  metrics_interval: 0s\n", "t.yaml");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, "t.yaml:4: health.metrics_interval: must be above 0");
}

}  // namespace
}  // namespace switchyard::fleet
