// The routing series of GatewayMetrics, read back from its exposition text.
#include "obs/gateway_metrics.h"

#include <gtest/gtest.h>

namespace switchyard::obs {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(GatewayMetrics, HomeWaitsAreTimedByWhetherTheRequestGotItsHome) {
  GatewayMetrics m;
  m.route_decided("session", "hit", 1.0, std::nullopt);  // did not wait: no series
  EXPECT_EQ(m.render(StatusSnapshot{}).find("switchyard_route_home_wait_seconds_count"),
            std::string::npos);
  m.route_decided("session", "hit", 1.0, 0.4);
  m.route_decided("session", "hit", 1.0, 1.5);
  m.route_decided("session", "bounded-out", 0.0, 5.0);
  const std::string text = m.render(StatusSnapshot{});
  EXPECT_TRUE(
      has_line(text, R"(switchyard_route_decisions_total{policy="session",reason="hit"} 3)"))
      << text;
  EXPECT_TRUE(has_line(
      text, R"(switchyard_route_home_wait_seconds_count{outcome="home",policy="session"} 2)"));
  EXPECT_TRUE(has_line(
      text, R"(switchyard_route_home_wait_seconds_sum{outcome="home",policy="session"} 1.9)"));
  EXPECT_TRUE(has_line(
      text,
      R"(switchyard_route_home_wait_seconds_bucket{outcome="home",policy="session",le="0.5"} 1)"));
  EXPECT_TRUE(has_line(
      text, R"(switchyard_route_home_wait_seconds_count{outcome="spilled",policy="session"} 1)"));
}

}  // namespace
}  // namespace switchyard::obs
