#include "config/fleet_config.h"

#include <gtest/gtest.h>

namespace switchyard::config {
namespace {

TEST(FleetConfig, ParsesAFullConfig) {
  auto c = parse_fleet_config(R"(
listen: 127.0.0.1:9000
models:
  - name: qwen-27b
    aliases: [default]
routing: round-robin
body_limit: 8MiB
api_keys: [sk-a]
timeouts:
  connect: 250ms
  stream_idle: 2m
instances:
  - name: gpu0
    model: qwen-27b
    command: llama-server --port ${PORT}
    gpus: [0, 1]
    env: {HIP_VISIBLE_DEVICES: "0,1"}
    slots: 4
  - name: remote
    model: qwen-27b
    url: http://10.0.0.2:8000
    api_key: sk-upstream
    served_model: Qwen/Qwen3-27B
)",
                              "fleet.yaml");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->listen, "127.0.0.1:9000");
  EXPECT_EQ(c->routing.policy, RoutingPolicy::round_robin);
  EXPECT_EQ(c->body_limit, 8u << 20);
  EXPECT_EQ(c->timeouts.connect, std::chrono::milliseconds(250));
  EXPECT_EQ(c->timeouts.stream_idle, std::chrono::minutes(2));
  ASSERT_EQ(c->instances.size(), 2u);
  EXPECT_EQ(c->instances[0].gpus, "0,1");
  EXPECT_EQ(c->instances[0].env.at("HIP_VISIBLE_DEVICES"), "0,1");
  EXPECT_EQ(c->instances[0].slots, 4);
  EXPECT_FALSE(c->instances[1].slots);
  EXPECT_EQ(c->instances[1].served_model, "Qwen/Qwen3-27B");
  EXPECT_EQ(c->api_keys, std::vector<std::string>{"sk-a"});
}

TEST(FleetConfig, ModelsDefaultToThoseInstancesServe) {
  auto c = parse_fleet_config(
      "instances:\n  - {model: a, url: 'http://x:1'}\n  - {model: b, url: 'http://x:2'}\n",
      "f.yaml");
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->models.size(), 2u);
  EXPECT_EQ(c->models[1].name, "b");
  EXPECT_EQ(c->instances[1].name, "instance1");
}

struct BadConfig {
  const char* yaml;
  const char* expected;  // the whole message must contain this
};

class FleetConfigErrors : public testing::TestWithParam<BadConfig> {};

TEST_P(FleetConfigErrors, NameFileLineAndField) {
  auto c = parse_fleet_config(GetParam().yaml, "fleet.yaml");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find(GetParam().expected), std::string::npos) << c.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    All, FleetConfigErrors,
    testing::Values(
        BadConfig{"instances:\n  - model: m\n    url: http://x:1\n    slots: many\n",
                  "fleet.yaml:4: instances[0].slots: expected a positive integer, got 'many'"},
        BadConfig{"instances:\n  - model: m\n    url: http://x:1\n    slot: 2\n",
                  "fleet.yaml:4: instances[0].slot: unknown field"},
        BadConfig{"instances:\n  - model: m\n    url: http://x:1\n    command: x\n",
                  "fleet.yaml:2: instances[0]: give exactly one of 'url'"},
        BadConfig{"models: [{name: a}]\ninstances:\n  - {model: b, url: 'http://x:1'}\n",
                  "fleet.yaml:3: instances[0].model: 'b' is not one of the models (a)"},
        BadConfig{"models:\n  - {name: a, aliases: [x]}\n  - {name: b, aliases: [x]}\ninstances: "
                  "[{model: a, url: 'http://x:1'}]\n",
                  "fleet.yaml:3: models[1].aliases: 'x' is already a model name or alias"},
        BadConfig{"instances:\n  - {name: g, model: m, url: 'http://x:1'}\n  - {name: g, model: m, "
                  "url: 'http://x:2'}\n",
                  "fleet.yaml:3: instances[1].name: 'g' is used twice"},
        BadConfig{"timeouts: {connect: soon}\ninstances: [{model: m, url: 'http://x:1'}]\n",
                  "fleet.yaml:1: timeouts.connect: 'soon' is not a duration"},
        BadConfig{"routing: random\ninstances: [{model: m, url: 'http://x:1'}]\n",
                  "fleet.yaml:1: routing: 'random' is not a policy"},
        BadConfig{"body_limit: lots\ninstances: [{model: m, url: 'http://x:1'}]\n",
                  "fleet.yaml:1: body_limit: 'lots' is not a size"},
        BadConfig{"models: []\n", "instances: required"},
        BadConfig{"instances:\n  - model: m\n    url: [unclosed\n", "fleet.yaml:4: invalid YAML"},
        BadConfig{"listen: x\nlisten_port: 3\ninstances: [{model: m, url: 'http://x:1'}]\n",
                  "fleet.yaml:2: listen_port: unknown field"},
        BadConfig{"instances:\n  - model: m\n    url: http://127.0.0.1:notaport\n",
                  "fleet.yaml:3: instances[0].url: 'http://127.0.0.1:notaport' is not a usable "
                  "URL: the port must be a number"},
        BadConfig{"instances:\n  - model: m\n    url: ftp://10.0.0.2/x\n",
                  "fleet.yaml:3: instances[0].url: 'ftp://10.0.0.2/x' is not a usable URL: it must "
                  "start with http://"},
        BadConfig{"instances:\n  - model: m\n    url: http://bob:hunter2@10.0.0.2:8000\n",
                  "fleet.yaml:3: instances[0].url: 'http://***@10.0.0.2:8000': user:password"},
        BadConfig{"timeouts:\n  connect: 0\ninstances: [{model: m, url: 'http://x:1'}]\n",
                  "fleet.yaml:2: timeouts.connect: must be above 0"},
        BadConfig{"timeouts: {first_byte: 0ms}\ninstances: [{model: m, url: 'http://x:1'}]\n",
                  "fleet.yaml:1: timeouts.first_byte: must be above 0"},
        BadConfig{"max_connections: 0\ninstances: [{model: m, url: 'http://x:1'}]\n",
                  "fleet.yaml:1: max_connections: expected a positive integer"}));

TEST(FleetConfig, CredentialsNeverAppearInMessages) {
  auto c = parse_fleet_config("instances:\n  - model: m\n    url: http://bob:hunter2@h:1\n", "f");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message.find("hunter2"), std::string::npos) << c.error().message;
}

TEST(FleetConfig, ZeroDrainAndStopMeanDoNotWait) {
  auto c = parse_fleet_config(
      "timeouts: {drain: 0, stop: 0}\nmax_connections: 100\ninstances: [{model: m, url: "
      "'http://x:1'}]\n",
      "f");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->timeouts.drain.count(), 0);
  EXPECT_EQ(c->max_connections, 100u);
}

TEST(RedactUrl, HidesUserInfoOnly) {
  EXPECT_EQ(redact_url("http://bob:pw@host:1/p@x"), "http://***@host:1/p@x");
  EXPECT_EQ(redact_url("http://bob@host"), "http://***@host");
  EXPECT_EQ(redact_url("http://host:1/a@b"), "http://host:1/a@b");
  EXPECT_EQ(redact_url("http://host:1"), "http://host:1");
}

FleetConfig base_config() {
  auto c = parse_fleet_config("instances: [{model: m, url: 'http://x:1'}]\n", "f");
  return *c;
}

TEST(RestartOnlyChanges, NamesEachSettingThatNeedsARestart) {
  const FleetConfig running = base_config();
  FleetConfig next = running;
  EXPECT_TRUE(restart_only_changes(running, next).empty());
  next.listen = "127.0.0.1:1";
  next.timeouts.connect = std::chrono::milliseconds(1);
  next.timeouts.stream_idle = std::chrono::milliseconds(2);
  next.health.interval = std::chrono::milliseconds(3);
  next.queue.max_wait = std::chrono::milliseconds(4);
  next.max_connections = 9;
  next.attempts = 7;         // applied live: not named
  next.api_keys = {"sk-x"};  // applied live: not named
  EXPECT_EQ(
      restart_only_changes(running, next),
      (std::vector<std::string>{"listen", "max_connections", "timeouts.connect",
                                "timeouts.stream_idle", "health.interval", "queue.max_wait"}));
}

TEST(RestartOnlyChanges, AReloadKeepsThemAllAndTakesTheRest) {
  const FleetConfig running = base_config();
  FleetConfig next = running;
  next.body_limit = 1;
  next.routing.policy = RoutingPolicy::round_robin;
  next.timeouts.first_byte = std::chrono::milliseconds(5);
  next.health.backoff = std::chrono::milliseconds(6);
  next.attempts = 7;
  next.instances[0].slots = 3;
  const FleetConfig applied = keep_restart_only_settings(running, next);
  EXPECT_TRUE(restart_only_changes(running, applied).empty());
  EXPECT_EQ(applied.attempts, 7);
  EXPECT_EQ(applied.instances[0].slots, 3);
}

TEST(DefaultMaxConnections, HalfOfWhatTheReserveLeaves) {
  FleetConfig c = base_config();  // one instance, slots unknown: idle pool 32
  EXPECT_EQ(default_max_connections(1024, c), (1024u - 64 - 34) / 2);
  c.instances[0].slots = 64;
  EXPECT_EQ(default_max_connections(1u << 20, c), ((1u << 20) - 64 - 66) / 2);
  EXPECT_EQ(default_max_connections(100, c), 16u);  // never below 16
}

TEST(Durations, Units) {
  EXPECT_EQ(*parse_duration("250ms"), std::chrono::milliseconds(250));
  EXPECT_EQ(*parse_duration("1.5s"), std::chrono::milliseconds(1500));
  EXPECT_EQ(*parse_duration("3"), std::chrono::seconds(3));
  EXPECT_EQ(*parse_duration("2h"), std::chrono::hours(2));
  EXPECT_FALSE(parse_duration("-1s"));
  EXPECT_FALSE(parse_duration("5 parsecs"));
}

TEST(Sizes, Units) {
  EXPECT_EQ(*parse_size("32MiB"), 32u << 20);
  EXPECT_EQ(*parse_size("1GB"), 1000000000u);
  EXPECT_EQ(*parse_size("65536"), 65536u);
  EXPECT_FALSE(parse_size("0"));
  EXPECT_FALSE(parse_size("12 bananas"));
}

}  // namespace
}  // namespace switchyard::config
