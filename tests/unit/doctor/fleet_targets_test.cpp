#include "doctor/fleet_targets.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

namespace switchyard::doctor {
namespace {

class FleetFile {
 public:
  explicit FleetFile(const std::string& yaml) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sy-fleet-XXXXXX").string();
    const int fd = mkstemp(tmpl.data());
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    close(fd);
    path_ = tmpl;
    std::ofstream(path_) << yaml;
  }
  ~FleetFile() { std::filesystem::remove(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

TEST(FleetTargets, TakesExternalUrlsAndSkipsSupervisedInstances) {
  FleetFile file(R"(
instances:
  - name: card0
    url: http://10.0.0.5:8080/
  - name: card1
    command: llama-server -m model.gguf --port ${PORT}
profiles:
  replicas:
    instances:
      - name: remote
        url: http://10.0.0.6:8000
      - name: card0-again
        url: http://10.0.0.5:8080
)");
  auto targets = read_fleet_targets(file.path());
  ASSERT_TRUE(targets.ok()) << targets.error().message;
  ASSERT_EQ(targets->urls.size(), 2u);
  EXPECT_EQ(targets->urls[0], "http://10.0.0.5:8080");
  EXPECT_EQ(targets->urls[1], "http://10.0.0.6:8000");
  ASSERT_EQ(targets->skipped.size(), 1u);
  EXPECT_EQ(targets->skipped[0].subject, "card1");
  EXPECT_EQ(targets->skipped[0].severity, Severity::note);
  EXPECT_NE(targets->skipped[0].message.find("doctor can only check running URLs"),
            std::string::npos);
  EXPECT_EQ(targets->supervised, std::vector<std::string>{"card1"});
  EXPECT_EQ(targets->listen, "127.0.0.1:8080");  // FleetConfig's default
}

TEST(FleetTargets, BadInputIsOneLineNamingTheFile) {
  auto missing = read_fleet_targets("/nonexistent/fleet.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "-c /nonexistent/fleet.yaml: cannot read the file");

  FleetFile invalid("instances: [unclosed\n");
  auto bad_yaml = read_fleet_targets(invalid.path());
  ASSERT_FALSE(bad_yaml.ok());
  EXPECT_EQ(bad_yaml.error().message.rfind("-c " + invalid.path().string() + ": ", 0), 0u);

  FleetFile empty("listen: 0.0.0.0:4000\n");
  auto none = read_fleet_targets(empty.path());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no instances list"), std::string::npos);

  FleetFile neither("instances:\n  - name: x\n");
  auto incomplete = read_fleet_targets(neither.path());
  ASSERT_FALSE(incomplete.ok());
  EXPECT_NE(incomplete.error().message.find("instances[0] has neither url nor command"),
            std::string::npos);
}

}  // namespace
}  // namespace switchyard::doctor
