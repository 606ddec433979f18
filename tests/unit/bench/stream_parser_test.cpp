#include "bench/stream_parser.h"

#include <gtest/gtest.h>

#include "bench/run_report.h"

namespace switchyard::bench {
namespace {

constexpr const char* kRole =
    R"({"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"object":"chat.completion.chunk"})";
constexpr const char* kFinish =
    R"({"choices":[{"finish_reason":"length","index":0,"delta":{}}],"object":"chat.completion.chunk"})";
constexpr const char* kUsage =
    R"({"choices":[],"usage":{"completion_tokens":3,"prompt_tokens":25,"total_tokens":28,"prompt_tokens_details":{"cached_tokens":4}},"timings":{"cache_n":4,"prompt_n":21,"predicted_n":3,"predicted_per_second":3065.7}})";

std::string content(const char* text) {
  return std::string(R"({"choices":[{"finish_reason":null,"index":0,"delta":{"content":")") + text +
         R"("}}],"object":"chat.completion.chunk"})";
}

TEST(StreamParser, ChatStreamTimingsUsageAndSelfReport) {
  RequestRecord r;
  StreamParser p(r);
  p.on_data(kRole, 5);  // no content: not the first token
  p.on_data(content(" under"), 10);
  p.on_data(content(" one"), 14);
  p.on_data(content(" The"), 20);
  p.on_data(kFinish, 21);
  p.on_data(kUsage, 21);
  p.on_data("[DONE]", 22);
  p.finish(23);
  EXPECT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.ttft_ms, 10);
  EXPECT_EQ(r.last_token_ms, 20);
  EXPECT_EQ(r.e2e_ms, 23);
  EXPECT_EQ(r.content_chunks, 3);
  EXPECT_EQ(r.completion_tokens, 3);
  EXPECT_EQ(r.prompt_tokens, 25);
  EXPECT_EQ(r.cached_tokens, 4);
  EXPECT_DOUBLE_EQ(r.self_reported_tps, 3065.7);
  EXPECT_EQ(r.finish_reason, "length");
  ASSERT_EQ(r.itl_ms.size(), 2u);
  EXPECT_EQ(r.itl_ms[0], 4);
  EXPECT_EQ(r.itl_ms[1], 6);
  EXPECT_DOUBLE_EQ(r.tpot_ms(), 5);  // (20 − 10) / (3 − 1)
}

TEST(StreamParser, TextCompletionChunks) {
  RequestRecord r;
  StreamParser p(r);
  p.on_data(R"({"choices":[{"text":" press","index":0,"finish_reason":null}]})", 3);
  p.on_data(
      R"({"choices":[{"text":"","index":0,"finish_reason":"length"}],"usage":{"completion_tokens":1,"prompt_tokens":3}})",
      4);
  p.on_data("[DONE]", 4);
  p.finish(4);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.ttft_ms, 3);
  EXPECT_EQ(r.content_chunks, 1);
  EXPECT_EQ(r.output_tokens(), 1);
  EXPECT_EQ(r.tpot_ms(), -1);  // undefined for one token
}

TEST(StreamParser, GapsArePerTokenWhenChunksCarrySeveral) {
  RequestRecord r;
  StreamParser p(r);
  p.on_data(content("a b"), 10);
  p.on_data(content("c d"), 30);
  p.on_data(R"({"choices":[],"usage":{"completion_tokens":4,"prompt_tokens":1}})", 30);
  p.on_data("[DONE]", 30);
  p.finish(31);
  ASSERT_EQ(r.itl_ms.size(), 1u);
  EXPECT_DOUBLE_EQ(r.itl_ms[0], 10);  // 20 ms over two tokens
  EXPECT_DOUBLE_EQ(r.tpot_ms(), 20.0 / 3);
}

TEST(StreamParser, InStreamErrorAndTruncation) {
  RequestRecord failed;
  StreamParser p(failed);
  p.on_data(content("x"), 1);
  p.on_data(R"({"error":{"message":"upstream failed","type":"upstream_error"}})", 2);
  p.on_data("[DONE]", 2);
  p.finish(2);
  EXPECT_EQ(failed.error, "stream_error");
  EXPECT_EQ(failed.error_detail, "upstream failed");

  RequestRecord cut;
  StreamParser q(cut);
  q.on_data(content("x"), 1);
  q.finish(2);
  EXPECT_EQ(cut.error, "truncated");
}

RequestRecord ok_record(double start_s, double ttft, double last, long tokens, double reported) {
  RequestRecord r;
  r.start_s = start_s;
  r.ttft_ms = ttft;
  r.last_token_ms = last;
  r.e2e_ms = last + 1;
  r.completion_tokens = tokens;
  r.content_chunks = tokens;
  r.prompt_tokens = 100;
  r.self_reported_tps = reported;
  r.finish_reason = "length";
  return r;
}

TEST(StepSummary, TokensOverWallWarmupExcludedAndInflation) {
  StepPlan plan;
  plan.concurrency = 2;
  StepOutcome out;
  out.wall_s = 2.0;
  auto warm = ok_record(0, 1, 100, 999, 10);
  warm.warmup = true;
  out.records.push_back(warm);
  // Decode at 1 token / 10 ms = 100 tok/s measured; self-reported 300: 3×.
  out.records.push_back(ok_record(0, 100, 100 + 99 * 10.0, 100, 300));
  out.records.push_back(ok_record(0, 100, 100 + 99 * 10.0, 100, 300));
  RequestRecord refused;
  refused.error = "http_503";
  refused.error_detail = "busy";
  out.records.push_back(refused);
  RequestRecord cut = ok_record(1, 5, 50, 10, -1);
  cut.short_output = true;
  out.records.push_back(cut);
  const auto s = summarize_step(plan, out);
  EXPECT_EQ(s.requests, 4);
  EXPECT_EQ(s.succeeded, 3);
  EXPECT_EQ(s.short_outputs, 1);
  EXPECT_EQ(s.output_tokens, 210);
  EXPECT_DOUBLE_EQ(s.output_tokens_per_s, 105);
  EXPECT_DOUBLE_EQ(s.requests_per_s, 1.5);
  EXPECT_EQ(s.errors.at("http_503"), 1);
  EXPECT_EQ(s.error_examples.at("http_503"), "busy");
  ASSERT_TRUE(s.self_report_ratio);
  EXPECT_NEAR(*s.self_report_ratio, 3.0, 1e-9);
  EXPECT_TRUE(s.inflated);
  // Each claims 300 tok/s over its 0.99 s of decoding: 2 × 297 tokens in 2 s.
  EXPECT_NEAR(*s.self_reported_tokens_per_s, 297, 1e-9);
}

TEST(StepSummary, HonestSelfReportIsNotFlagged) {
  StepPlan plan;
  plan.concurrency = 1;
  StepOutcome out;
  out.wall_s = 1;
  out.records.push_back(ok_record(0, 100, 100 + 99 * 10.0, 100, 105));
  const auto s = summarize_step(plan, out);
  EXPECT_FALSE(s.inflated);
  EXPECT_NEAR(*s.self_report_ratio, 1.05, 1e-9);
}

// Every request off its target counts, not only a step mean off by 0.5:
// 3 of 8 at 255 for 256 moves the mean by 0.375.
TEST(StepSummary, EveryPromptOffItsTargetIsCountedWithTheWorst) {
  StepPlan plan;
  plan.concurrency = 1;
  StepOutcome out;
  out.wall_s = 1;
  for (int i = 0; i < 8; ++i) {
    auto r = ok_record(0, 10, 100, 10, -1);
    r.prompt_target = 256;
    r.prompt_tokens = i < 3 ? 255 : 256;
    out.records.push_back(r);
  }
  auto far = ok_record(0, 10, 100, 10, -1);
  far.prompt_target = 256;
  far.prompt_tokens = 237;
  out.records.push_back(far);
  auto untargeted = ok_record(0, 10, 100, 10, -1);
  untargeted.prompt_tokens = 9000;  // a later agent turn: no exact target
  out.records.push_back(untargeted);
  const auto s = summarize_step(plan, out);
  EXPECT_EQ(s.prompt_checked, 9);
  EXPECT_EQ(s.prompt_off_target, 4);
  EXPECT_EQ(s.worst_prompt_tokens, 237);
  EXPECT_EQ(s.worst_prompt_target, 256);
}

TEST(StepSummary, OpenLoopReportsTheAchievedArrivalRate) {
  StepPlan plan;
  plan.rate = 10;
  StepOutcome out;
  out.wall_s = 2;
  // Five sends over 0.8 s: 5 per second reached of 10 offered.
  for (double at : {0.0, 0.2, 0.4, 0.6, 0.8}) {
    auto r = ok_record(0, 10, 100, 10, -1);
    r.start_s = at;
    out.records.push_back(r);
  }
  const auto s = summarize_step(plan, out);
  ASSERT_TRUE(s.achieved_rate);
  EXPECT_NEAR(*s.achieved_rate, 5.0, 1e-9);
  plan.rate = 0;
  EXPECT_FALSE(summarize_step(plan, out).achieved_rate);
}

TEST(StepSummary, PromptsOnTargetAreNotFlagged) {
  StepPlan plan;
  StepOutcome out;
  out.wall_s = 1;
  auto r = ok_record(0, 10, 100, 10, -1);
  r.prompt_target = 100;
  out.records.push_back(r);
  const auto s = summarize_step(plan, out);
  EXPECT_EQ(s.prompt_checked, 1);
  EXPECT_EQ(s.prompt_off_target, 0);
  EXPECT_EQ(s.worst_prompt_tokens, -1);
}

}  // namespace
}  // namespace switchyard::bench
