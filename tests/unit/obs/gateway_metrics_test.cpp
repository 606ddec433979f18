// GatewayMetrics, read back from its exposition text.
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

// A dashboard's rate() over a series that appears with its first event
// misses that event, and an absent series reads as broken: the counters and
// histograms of what has yet to happen are there at 0 from the first render.
TEST(GatewayMetrics, TheFirstRenderHasEveryCountOfTheFleetAtZero) {
  GatewayMetrics m;
  StatusSnapshot status;
  InstanceStatus gpu0;
  gpu0.name = "gpu0";
  gpu0.model = "qwen";
  status.instances.push_back(gpu0);
  status.models.push_back(ModelStatus{"qwen", 0});
  const std::string text = m.render(status);
  for (const char* line :
       {R"(switchyard_retries_total{instance="gpu0",model="qwen"} 0)",
        R"(switchyard_queue_wait_seconds_count{model="qwen"} 0)",
        R"(switchyard_tokens_total{kind="prompt",model="qwen"} 0)",
        R"(switchyard_tokens_total{kind="completion",model="qwen"} 0)",
        R"(switchyard_requests_total{instance="gpu0",model="qwen",outcome="ok",status="200"} 0)",
        R"(switchyard_time_to_first_byte_seconds_count{model="qwen"} 0)",
        R"(switchyard_request_duration_seconds_count{model="qwen"} 0)"})
    EXPECT_TRUE(has_line(text, line)) << line << "\n" << text;
  // Later events count on the same series.
  m.add_retry("qwen", "gpu0");
  m.add_tokens("qwen", 5, 0);
  const std::string after = m.render(status);
  EXPECT_TRUE(has_line(after, R"(switchyard_retries_total{instance="gpu0",model="qwen"} 1)"));
  EXPECT_TRUE(has_line(after, R"(switchyard_tokens_total{kind="prompt",model="qwen"} 5)"));
}

}  // namespace
}  // namespace switchyard::obs
