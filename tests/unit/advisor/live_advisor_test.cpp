#include "advisor/live_advisor.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace switchyard::advisor {
namespace {

using namespace std::chrono_literals;
using clock = LiveAdvisor::clock;

std::string vllm(double waiting, double kv_usage, double prefix_queries = 0,
                 double prefix_hits = 0) {
  return fmt::format(
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{{model_name=\"q\"}} 4\n"
      "# TYPE vllm:num_requests_waiting gauge\n"
      "vllm:num_requests_waiting{{model_name=\"q\"}} {}\n"
      "# TYPE vllm:kv_cache_usage_perc gauge\n"
      "vllm:kv_cache_usage_perc{{model_name=\"q\"}} {}\n"
      "vllm:prefix_cache_queries_total{{model_name=\"q\"}} {}\n"
      "vllm:prefix_cache_hits_total{{model_name=\"q\"}} {}\n",
      waiting, kv_usage, prefix_queries, prefix_hits);
}

const clock::time_point t0 = clock::time_point(std::chrono::hours(1));

TEST(LiveAdvisor, AFindingStartsWithItsWindowAndStopsWhenTheEngineRecovers) {
  LiveAdvisor advisor;
  advisor.observe("tp2", vllm(3, 0.97), t0);
  EXPECT_TRUE(advisor.findings().empty()) << "one scrape is no window yet";
  advisor.observe("tp2", vllm(5, 0.98), t0 + 5s);
  auto found = advisor.findings();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].instance, "tp2");
  EXPECT_EQ(found[0].finding.check, "backend.kv_full");
  EXPECT_EQ(found[0].finding.severity, Severity::warning);
  EXPECT_EQ(found[0].finding.subject, "tp2");
  EXPECT_NE(found[0].finding.message.find("5 requests are waiting"), std::string::npos)
      << found[0].finding.message;

  advisor.observe("tp2", vllm(0, 0.5), t0 + 10s);
  advisor.observe("tp2", vllm(0, 0.4), t0 + 15s);
  EXPECT_TRUE(advisor.findings().empty());
}

TEST(LiveAdvisor, AWindowAfterIdleTimeStartsWhereTheEngineWasLastSeenIdle) {
  const auto generated = [](int tokens) {
    return fmt::format("vllm:generation_tokens_total{{model_name=\"q\"}} {}\n", tokens);
  };
  LiveAdvisor advisor;
  advisor.observe("tp2", generated(100), t0);
  // Ten idle minutes unscraped (the last idle round at t0 + 595 s), then
  // 500 tokens before the next scrape.
  advisor.observe("tp2", generated(600), t0 + 600s, t0 + 595s);
  EXPECT_EQ(advisor.measurement("tp2", "generation_tokens_per_s"), 100.0)
      << "500 tokens over 5 s, not over 600";
  advisor.observe("tp2", generated(1100), t0 + 610s);
  EXPECT_EQ(advisor.measurement("tp2", "generation_tokens_per_s"), 50.0);
}

TEST(LiveAdvisor, MeasurementsOfTheLastWindowAndForgettingAnInstance) {
  LiveAdvisor advisor;
  advisor.observe("tp2", vllm(0, 0.1, 1000, 0), t0);
  advisor.observe("tp2", vllm(0, 0.1, 3000, 1500), t0 + 5s);
  EXPECT_EQ(advisor.measurement("tp2", "prefix_cache_hit_rate"), 0.75);
  EXPECT_EQ(advisor.measurement("tp2", "no_such_measurement"), std::nullopt);
  EXPECT_EQ(advisor.measurement("gpu9", "prefix_cache_hit_rate"), std::nullopt);

  advisor.observe("tp2", vllm(2, 0.95, 4000, 2000), t0 + 10s);
  ASSERT_EQ(advisor.findings().size(), 1u);
  advisor.forget("tp2");
  EXPECT_TRUE(advisor.findings().empty());
  EXPECT_EQ(advisor.measurement("tp2", "prefix_cache_hit_rate"), std::nullopt);
  // After forgetting, the next scrape starts a new window.
  advisor.observe("tp2", vllm(2, 0.95), t0 + 20s);
  EXPECT_TRUE(advisor.findings().empty());
}

TEST(LiveAdvisor, InstancesAreCheckedApartAndWindowNotesAreLeftToDoctor) {
  LiveAdvisor advisor;
  const std::string idle_llama =
      "# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total 10\n"
      "llamacpp:predicted_tokens_seconds 60\nllamacpp:requests_processing 0\n"
      "llamacpp:requests_deferred 0\n";
  advisor.observe("gpu0", idle_llama, t0);
  advisor.observe("tp2", vllm(1, 0.99), t0);
  advisor.observe("gpu0", idle_llama, t0 + 5s);
  advisor.observe("tp2", vllm(1, 0.99), t0 + 5s);
  const auto found = advisor.findings();
  ASSERT_EQ(found.size(), 1u) << found[0].finding.check;
  EXPECT_EQ(found[0].instance, "tp2");
}

}  // namespace
}  // namespace switchyard::advisor
