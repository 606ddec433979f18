// The `routing:` section: a policy name, or a map with the bound and header.
#include <gtest/gtest.h>

#include "config/fleet_config.h"

namespace switchyard::config {
namespace {

Result<FleetConfig> with_routing(const std::string& routing) {
  return parse_fleet_config(routing + "\ninstances: [{model: m, url: 'http://x:1'}]\n",
                            "fleet.yaml");
}

TEST(RoutingConfig, AScalarNamesThePolicy) {
  auto c = with_routing("routing: least-outstanding");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->routing, config::RoutingOptions{});
  c = with_routing("routing: session");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->routing.policy, RoutingPolicy::session);
}

TEST(RoutingConfig, AMapSetsTheBoundAndTheHeader) {
  auto c =
      with_routing("routing: {policy: prefix-affinity, balance_factor: 1.5, route_header: false}");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->routing.policy, RoutingPolicy::prefix_affinity);
  EXPECT_DOUBLE_EQ(c->routing.balance_factor, 1.5);
  EXPECT_FALSE(c->routing.route_header);
}

TEST(RoutingConfig, HomeWaitIsADurationDefaultingToFiveSeconds) {
  auto c = with_routing("routing: session");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->routing.home_wait, std::chrono::seconds(5));
  c = with_routing("routing: {policy: session, home_wait: 500ms}");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->routing.home_wait, std::chrono::milliseconds(500));
  c = with_routing("routing: {policy: session, home_wait: 0}");
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->routing.home_wait, std::chrono::milliseconds(0));
}

TEST(RoutingConfig, ErrorsNameTheField) {
  const std::pair<const char*, const char*> bad[] = {
      {"routing: {policy: sticky}", "fleet.yaml:1: routing.policy: 'sticky' is not a policy"},
      {"routing: {balance_factor: 0.9}",
       "fleet.yaml:1: routing.balance_factor: '0.9' is not a number of at least 1"},
      {"routing: {balance_factor: lots}", "routing.balance_factor: 'lots' is not a number"},
      {"routing: {route_header: maybe}", "routing.route_header: 'maybe' is not true or false"},
      {"routing: {bound: 2}", "routing.bound: unknown field"},
      {"routing: {home_wait: soon}", "routing.home_wait: 'soon' is not a duration"},
  };
  for (const auto& [yaml, message] : bad) {
    const auto c = with_routing(yaml);
    ASSERT_FALSE(c) << yaml;
    EXPECT_NE(c.error().message.find(message), std::string::npos)
        << yaml << " → " << c.error().message;
  }
}

}  // namespace
}  // namespace switchyard::config
