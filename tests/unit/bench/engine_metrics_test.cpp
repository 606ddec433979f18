#include "bench/engine_metrics.h"

#include <gtest/gtest.h>

namespace switchyard::bench {
namespace {

std::string vllm_text(double generated, double itl_sum, double itl_count) {
  return "# HELP vllm:generation_tokens Number of generation tokens processed.\n"
         "# TYPE vllm:generation_tokens counter\n"
         "vllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} " +
         std::to_string(generated) +
         "\n"
         "# TYPE vllm:inter_token_latency_seconds histogram\n"
         "vllm:inter_token_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} " +
         std::to_string(itl_count) + "\nvllm:inter_token_latency_seconds_sum{engine=\"0\"} " +
         std::to_string(itl_sum) + "\nvllm:inter_token_latency_seconds_count{engine=\"0\"} " +
         std::to_string(itl_count) + "\n";
}

RequestRecord decoded(long tokens, double tpot_ms, bool warmup = false) {
  RequestRecord r;
  r.warmup = warmup;
  r.ttft_ms = 100;
  r.last_token_ms = 100 + tpot_ms * static_cast<double>(tokens - 1);
  r.completion_tokens = tokens;
  return r;
}

TEST(EngineMetrics, ReadsVllmCountersAndIgnoresOtherEngines) {
  auto c = parse_vllm_metrics(vllm_text(1000, 2.5, 500));
  ASSERT_TRUE(c);
  EXPECT_DOUBLE_EQ(*c->generation_tokens, 1000);
  EXPECT_DOUBLE_EQ(*c->itl_sum_s, 2.5);
  EXPECT_DOUBLE_EQ(*c->itl_count, 500);
  EXPECT_FALSE(parse_vllm_metrics("llamacpp:tokens_predicted_total 5\n"));
  auto old = parse_vllm_metrics(
      "vllm:time_per_output_token_seconds_sum{model_name=\"m\"} 1.0\n"
      "vllm:time_per_output_token_seconds_count{model_name=\"m\"} 100\n");
  ASSERT_TRUE(old);
  EXPECT_DOUBLE_EQ(*old->itl_count, 100);
  EXPECT_FALSE(old->generation_tokens);
}

TEST(EngineMetrics, AnEngineClaimingThreeTimesItsSpeedIsInflated) {
  StepReport step;
  step.wall_s = 2;
  // Measured: 10 ms per token (100 tok/s); the engine says 1000 tokens in
  // 3.33 s of inter-token time (300 tok/s).
  std::vector<RequestRecord> records{decoded(100, 10), decoded(100, 10), decoded(50, 10, true)};
  const auto before = *parse_vllm_metrics(vllm_text(0, 0, 0));
  const auto after = *parse_vllm_metrics(vllm_text(250, 1000.0 / 300, 1000));
  apply_engine_counters(step, records, before, after);
  ASSERT_TRUE(step.self_report_ratio);
  EXPECT_NEAR(*step.self_report_ratio, 3.0, 1e-6);
  EXPECT_TRUE(step.inflated);
  // 250 counted, 50 of them warm-up, over 2 s.
  EXPECT_NEAR(*step.self_reported_tokens_per_s, 100, 1e-9);
}

TEST(EngineMetrics, AnHonestEngineIsNotFlaggedAndTimingsWin) {
  StepReport step;
  step.wall_s = 1;
  std::vector<RequestRecord> records{decoded(100, 10)};
  const auto before = *parse_vllm_metrics(vllm_text(0, 0, 0));
  const auto after = *parse_vllm_metrics(vllm_text(100, 0.99, 99));
  apply_engine_counters(step, records, before, after);
  EXPECT_NEAR(*step.self_report_ratio, 1.0, 1e-6);
  EXPECT_FALSE(step.inflated);
  StepReport timed;
  timed.self_reported_tokens_per_s = 42;
  apply_engine_counters(timed, records, before, after);
  EXPECT_FALSE(timed.self_report_ratio);
  EXPECT_DOUBLE_EQ(*timed.self_reported_tokens_per_s, 42);
}

}  // namespace
}  // namespace switchyard::bench
