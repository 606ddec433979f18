// /health's redis entry (issue 14): its state, and whether a Redis down
// makes the gateway unhealthy (only with redis_down: reject).
#include <boost/json.hpp>

#include <gtest/gtest.h>

#include "gateway/info_routes.h"

namespace switchyard::gateway {
namespace {

obs::StatusSnapshot serving() {
  obs::StatusSnapshot s;
  obs::InstanceStatus inst;
  inst.name = "a";
  inst.routable = true;
  s.instances.push_back(inst);
  return s;
}

boost::json::object body_of(const http::Response& r) {
  return boost::json::parse(r.body).as_object();
}

TEST(HealthRedis, UnconfiguredWithoutRedis) {
  const auto r = health_response(serving(), true);
  EXPECT_EQ(r.status, 200);
  const auto body = body_of(r);
  EXPECT_EQ(body.at("redis").at("state").as_string(), "unconfigured");
  // Without detail and without redis: the status alone, as before.
  EXPECT_FALSE(body_of(health_response(serving(), false)).contains("redis"));
}

TEST(HealthRedis, UpSaysSince) {
  auto s = serving();
  s.redis = {"up", 1'800'000'000, "", true};
  const auto r = health_response(s, true);
  EXPECT_EQ(r.status, 200);
  const auto body = body_of(r);
  EXPECT_EQ(body.at("status").as_string(), "ok");
  EXPECT_EQ(body.at("redis").at("state").as_string(), "up");
  EXPECT_EQ(body.at("redis").at("since").as_int64(), 1'800'000'000);
  EXPECT_EQ(body.at("redis").at("last_error").as_string(), "");
}

TEST(HealthRedis, DownIsUnhealthyOnlyWhenItRefusesRequests) {
  auto s = serving();
  s.redis = {"down", 1'800'000'000, "Connection refused", true};
  auto r = health_response(s, true);
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(body_of(r).at("status").as_string(), "unavailable");
  EXPECT_EQ(body_of(r).at("redis").at("last_error").as_string(), "Connection refused");
  s.redis.required = false;  // redis_down: local
  r = health_response(s, true);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(body_of(r).at("status").as_string(), "ok");
  EXPECT_EQ(body_of(r).at("redis").at("state").as_string(), "down");
}

TEST(HealthRedis, TheErrorIsDetail) {
  auto s = serving();
  s.redis = {"down", 1, "cannot resolve redis.internal: Host not found", false};
  const auto body = body_of(health_response(s, false));
  EXPECT_EQ(body.at("redis").at("state").as_string(), "down");
  EXPECT_FALSE(body.at("redis").as_object().contains("last_error"));
}

}  // namespace
}  // namespace switchyard::gateway
