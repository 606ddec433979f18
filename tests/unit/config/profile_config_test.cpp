#include <gtest/gtest.h>

#include "config/fleet_config.h"

namespace switchyard::config {
namespace {

constexpr const char* kInstances = R"(
instances:
  - {name: xtx0, model: m, gpus: [0], command: run0}
  - {name: xtx1, model: m, gpus: [1], command: run1}
  - {name: tp2, model: m, gpus: [0, 1], command: run2, sleep: true}
)";

Result<FleetConfig> with_profiles(const std::string& rest) {
  return parse_fleet_config(std::string(kInstances) + rest, "fleet.yaml");
}

TEST(ProfileConfig, ParsesProfilesInOrderAndSwitching) {
  auto c = with_profiles(R"(
profiles:
  replicas: [xtx0, xtx1]
  tp2: [tp2]
switching:
  mode: on-demand
  drain_timeout: 30s
  on_drain_timeout: abort
  min_dwell: 2m
  max_hold: 90s
  queue_depth: 4
  estimates:
    tp2: {decode_tps: 20.5, prefill_tps: 3377, prefill_half_depth: 65000, context: 163840}
admin_key: sk-admin
)");
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->profiles.size(), 2u);
  EXPECT_EQ(c->profiles[0].name, "replicas");
  EXPECT_EQ(c->profiles[0].instances, (std::vector<std::string>{"xtx0", "xtx1"}));
  EXPECT_EQ(c->profiles[1].name, "tp2");
  EXPECT_TRUE(c->instances[2].sleep);
  EXPECT_FALSE(c->instances[0].sleep);
  const auto& s = c->switching;
  EXPECT_EQ(s.mode, SwitchingOptions::Mode::on_demand);
  EXPECT_EQ(s.drain_timeout, std::chrono::seconds(30));
  EXPECT_TRUE(s.abort_on_drain_timeout);
  EXPECT_EQ(s.min_dwell, std::chrono::minutes(2));
  EXPECT_EQ(s.max_hold, std::chrono::seconds(90));
  EXPECT_EQ(s.queue_depth, 4);
  EXPECT_EQ(s.estimates.at("tp2").context, 163840);
  EXPECT_EQ(s.estimates.at("tp2").prefill_tps, 3377);
  EXPECT_EQ(c->admin_key, "sk-admin");
}

void expect_error(const std::string& rest, const std::string& part) {
  auto c = with_profiles(rest);
  ASSERT_FALSE(c) << "accepted:\n" << rest;
  EXPECT_NE(c.error().message.find(part), std::string::npos) << c.error().message;
}

TEST(ProfileConfig, RejectsWhatCannotWork) {
  expect_error("profiles:\n  a: [nope]\n", "profiles.a: 'nope' is not one of the instances");
  expect_error("profiles:\n  a: [xtx0, xtx0]\n", "'xtx0' is listed twice");
  expect_error("profiles:\n  a: [xtx0, tp2]\n", "'xtx0' and 'tp2' share a GPU");
  expect_error("profiles:\n  a: []\n", "profiles.a");
  // xtx1 always runs, on a card tp2 needs.
  expect_error("profiles:\n  a: [xtx0]\n  b: [tp2]\n", "'xtx1' is in no profile");
  expect_error("profiles:\n  a: [xtx0, xtx1]\n  b: [tp2]\nswitching:\n  mode: sometimes\n",
               "switching.mode: 'sometimes' is not one of: manual, on-demand");
  expect_error("profiles:\n  a: [xtx0, xtx1]\n  b: [tp2]\nswitching:\n  on_drain_timeout: kill\n",
               "switching.on_drain_timeout");
  expect_error(
      "profiles:\n  a: [xtx0, xtx1]\n  b: [tp2]\nswitching:\n  estimates:\n    ghost: {decode_tps: "
      "1}\n",
      "switching.estimates: 'ghost' is not one of the instances");
  expect_error(
      "profiles:\n  a: [xtx0, xtx1]\n  b: [tp2]\nswitching:\n  estimates:\n    tp2: {decode_tps: "
      "-1}\n",
      "switching.estimates.tp2.decode_tps: expected a positive number");
  expect_error("profiles:\n  a: [xtx0, xtx1]\n  b: [tp2]\nswitching:\n  max_hold: 0s\n",
               "switching.max_hold");
  expect_error("profiles:\n  a: [xtx0, xtx1]\n  b: [tp2]\nswitching:\n  bogus: 1\n",
               "switching.bogus: unknown");
}

TEST(ProfileConfig, AUrlInstanceNeedsSleepToBeInAProfile) {
  auto c = parse_fleet_config(R"(
instances:
  - {name: a, model: m, url: "http://127.0.0.1:9000"}
  - {name: b, model: m, command: run}
profiles:
  one: [a]
  two: [b]
)",
                              "fleet.yaml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("has a url and no 'sleep: true'"), std::string::npos)
      << c.error().message;
}

TEST(ProfileConfig, PrestartNeedsASleepingEngineParkedAtStart) {
  const auto with = [](const std::string& tp2, const std::string& profiles) {
    return parse_fleet_config(R"(
instances:
  - {name: xtx0, model: m, gpus: [0], command: run0}
  - {name: xtx1, model: m, gpus: [1], command: run1}
  - )" + tp2 + "\n" + profiles,
                              "fleet.yaml");
  };
  const std::string two = "profiles:\n  replicas: [xtx0, xtx1]\n  tp2: [tp2]\n";
  auto ok =
      with("{name: tp2, model: m, gpus: [0, 1], command: run2, sleep: true, prestart: true}", two);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_TRUE(ok->instances[2].prestart);
  EXPECT_FALSE(ok->instances[0].prestart);
  const auto error = [&](const std::string& tp2, const std::string& profiles) {
    auto c = with(tp2, profiles);
    return c ? std::string("accepted") : c.error().message;
  };
  EXPECT_NE(error("{name: tp2, model: m, gpus: [0, 1], command: run2, prestart: true}", two)
                .find("fleet.yaml:5: instances[2].prestart: needs 'sleep: true'"),
            std::string::npos);
  EXPECT_NE(error("{name: tp2, model: m, gpus: [0, 1], url: 'http://h:1', sleep: true, "
                  "prestart: true}",
                  two)
                .find("instances[2].prestart: needs 'sleep: true' and a 'command'"),
            std::string::npos);
  // In the first profile it runs from the start; in none it always runs.
  EXPECT_NE(error("{name: tp2, model: m, gpus: [0, 1], command: run2, sleep: true, prestart: true}",
                  "profiles:\n  tp2: [tp2]\n  replicas: [xtx0, xtx1]\n")
                .find("'tp2' is not parked at start"),
            std::string::npos);
  EXPECT_NE(
      error("{name: tp2, model: m, gpus: [2], command: run2, sleep: true, prestart: true}", "")
          .find("'tp2' is not parked at start"),
      std::string::npos);
  EXPECT_NE(error("{name: tp2, model: m, gpus: [0, 1], command: run2, sleep: maybe}", two)
                .find("instances[2].sleep"),
            std::string::npos);
}

TEST(ProfileConfig, ProfilesAndSwitchingAreRestartOnly) {
  auto a = with_profiles("profiles:\n  r: [xtx0, xtx1]\n  t: [tp2]\n");
  auto b = with_profiles("profiles:\n  r: [xtx0, xtx1]\n  t: [tp2]\nswitching:\n  min_dwell: 1m\n");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(restart_only_changes(*a, *b), std::vector<std::string>{"switching"});
}

}  // namespace
}  // namespace switchyard::config
