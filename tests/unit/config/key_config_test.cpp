// The config's api_keys entries with names and limits, and state_db.
#include <gtest/gtest.h>

#include "config/fleet_config.h"

namespace switchyard::config {
namespace {

constexpr const char* base = R"(
instances:
  - {name: a, model: m, url: "http://127.0.0.1:1"}
)";

Result<FleetConfig> with_keys(const std::string& extra) {
  return parse_fleet_config(std::string(base) + extra, "/etc/switchyard/fleet.yaml");
}

TEST(KeyConfig, PlainAndNamedKeysWithLimits) {
  auto c = with_keys(R"(api_keys:
  - sk-plain
  - key: sk-alice
    name: alice
    rpm: 10
    tpm: 5000
    tokens_per_day: 100000
    max_concurrency: 2
    max_sessions: 1
    session_idle: 10m
    priority: 2
    weight: 0.5
    models: [m]
)");
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->static_keys.size(), 2u);
  EXPECT_EQ(c->api_keys, (std::vector<std::string>{"sk-plain", "sk-alice"}));
  EXPECT_EQ(c->static_keys[0].name, "api_keys[0]");
  const auto& l = c->static_keys[1].limits;
  EXPECT_EQ(c->static_keys[1].name, "alice");
  EXPECT_EQ(l.rpm, 10);
  EXPECT_EQ(l.tpm, 5000);
  EXPECT_EQ(l.tokens_per_day, 100000);
  EXPECT_EQ(l.max_concurrency, 2);
  EXPECT_EQ(l.max_sessions, 1);
  EXPECT_EQ(l.session_idle, std::chrono::minutes(10));
  EXPECT_EQ(l.priority, 2);
  EXPECT_EQ(l.weight, 0.5);
  EXPECT_EQ(l.models, std::vector<std::string>{"m"});
}

TEST(KeyConfig, ErrorsNameTheField) {
  auto bad_rpm = with_keys("api_keys: [{key: k, rpm: -1}]\n");
  ASSERT_FALSE(bad_rpm);
  EXPECT_NE(bad_rpm.error().message.find("api_keys[0].rpm"), std::string::npos);
  auto no_key = with_keys("api_keys: [{name: x}]\n");
  ASSERT_FALSE(no_key);
  EXPECT_NE(no_key.error().message.find("api_keys[0].key: required"), std::string::npos);
  auto twice = with_keys("api_keys: [{key: a, name: x}, {key: b, name: x}]\n");
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().message.find("used twice"), std::string::npos);
  auto weight = with_keys("api_keys: [{key: a, weight: 0}]\n");
  ASSERT_FALSE(weight);
  EXPECT_NE(weight.error().message.find("api_keys[0].weight"), std::string::npos);
}

TEST(KeyConfig, StateDbBesideTheConfigByDefault) {
  EXPECT_EQ(with_keys("")->state_db, "/etc/switchyard/switchyard.db");
  EXPECT_EQ(with_keys("state_db: state/keys.db\n")->state_db, "/etc/switchyard/state/keys.db");
  EXPECT_EQ(with_keys("state_db: /var/lib/sy.db\n")->state_db, "/var/lib/sy.db");
}

TEST(KeyConfig, RedisPollDefaultsAndBounds) {
  EXPECT_EQ(with_keys("redis: redis://127.0.0.1\n")->redis_poll, std::chrono::milliseconds(500));
  EXPECT_EQ(with_keys("redis: redis://127.0.0.1\nredis_poll: 30s\n")->redis_poll,
            std::chrono::seconds(30));
  auto tiny = with_keys("redis: redis://127.0.0.1\nredis_poll: 1ms\n");
  ASSERT_FALSE(tiny);
  EXPECT_NE(tiny.error().message.find("redis_poll"), std::string::npos);
  auto alone = with_keys("redis_poll: 1s\n");
  ASSERT_FALSE(alone);
  EXPECT_NE(alone.error().message.find("need redis:"), std::string::npos);
}

TEST(KeyConfig, StaticKeyNamesFollowTheCliRule) {
  // The CLI refuses such names; the config did not (HTML in the dashboard).
  auto html = with_keys("api_keys: [{key: a, name: \"<img src=x onerror=alert(1)>\"}]\n");
  ASSERT_FALSE(html);
  EXPECT_NE(html.error().message.find("api_keys[0].name"), std::string::npos);
  EXPECT_NE(html.error().message.find("letters, digits"), std::string::npos);
  EXPECT_FALSE(with_keys("api_keys: [{key: a, name: \"has space\"}]\n"));
  EXPECT_FALSE(with_keys("api_keys: [{key: a, name: " + std::string(65, 'x') + "}]\n"));
  EXPECT_TRUE(with_keys("api_keys: [{key: a, name: ci-bot_2.prod@team}]\n"));
}

TEST(KeyConfig, RedisSecretAndAdminHosts) {
  auto c = with_keys(
      "redis: redis://127.0.0.1\nredis_secret: s3cret\nadmin_hosts: [gpu-box.lan, gw.example]\n");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->redis_secret, "s3cret");
  EXPECT_EQ(c->admin_hosts, (std::vector<std::string>{"gpu-box.lan", "gw.example"}));
  auto alone = with_keys("redis_secret: s3cret\n");
  ASSERT_FALSE(alone);
  EXPECT_NE(alone.error().message.find("need redis:"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::config
