#include "advisor/backend_checks.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <vector>

namespace switchyard::advisor {
namespace {

// A vLLM (V1) /metrics page in the shape vLLM serves it: every series labelled
// with engine and model_name, counters with the _total suffix, cache_config_info
// as an info metric, TTFT as a histogram.
struct VllmState {
  double running = 0;
  double waiting = 0;
  double kv_usage = 0;
  double preemptions = 0;
  double generated = 0;
  double prefix_queries = 0;
  double prefix_hits = 0;
  double draft_tokens = 0;
  double accepted_tokens = 0;
  double ttft_fast = 0;  // observations under 0.5 s
  double ttft_slow = 0;  // observations between 0.5 s and 5 s
  double ttft_sum = 0;
  const char* kv_name = "vllm:kv_cache_usage_perc";
};

std::string vllm_metrics(const VllmState& s) {
  const char* l = "engine=\"0\",model_name=\"Qwen3.8-27B\"";
  return fmt::format(
      "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
      "# TYPE vllm:num_requests_running gauge\n"
      "vllm:num_requests_running{{{0}}} {1}\n"
      "# TYPE vllm:num_requests_waiting gauge\n"
      "vllm:num_requests_waiting{{{0}}} {2}\n"
      "# TYPE {12} gauge\n"
      "{12}{{{0}}} {3}\n"
      "# TYPE vllm:num_preemptions counter\n"
      "vllm:num_preemptions_total{{{0}}} {4}\n"
      "# TYPE vllm:generation_tokens counter\n"
      "vllm:generation_tokens_total{{{0}}} {5}\n"
      "vllm:prefix_cache_queries_total{{{0}}} {6}\n"
      "vllm:prefix_cache_hits_total{{{0}}} {7}\n"
      "vllm:spec_decode_num_draft_tokens_total{{{0}}} {8}\n"
      "vllm:spec_decode_num_accepted_tokens_total{{{0}}} {9}\n"
      "# TYPE vllm:cache_config_info gauge\n"
      "vllm:cache_config_info{{block_size=\"16\",cache_dtype=\"fp8\",enable_prefix_caching="
      "\"True\","
      "num_gpu_blocks=\"26000\",num_cpu_blocks=\"None\"}} 1.0\n"
      "# TYPE vllm:time_to_first_token_seconds histogram\n"
      "vllm:time_to_first_token_seconds_bucket{{{0},le=\"0.5\"}} {10}\n"
      "vllm:time_to_first_token_seconds_bucket{{{0},le=\"5.0\"}} {13}\n"
      "vllm:time_to_first_token_seconds_bucket{{{0},le=\"+Inf\"}} {13}\n"
      "vllm:time_to_first_token_seconds_count{{{0}}} {13}\n"
      "vllm:time_to_first_token_seconds_sum{{{0}}} {11}\n",
      l, s.running, s.waiting, s.kv_usage, s.preemptions, s.generated, s.prefix_queries,
      s.prefix_hits, s.draft_tokens, s.accepted_tokens, s.ttft_fast, s.ttft_sum, s.kv_name,
      s.ttft_fast + s.ttft_slow);
}

// llama-server's /metrics in the captured reference's shape
// (shared/reference/llamacpp/metrics.body), with the values a test needs.
struct LlamaState {
  double predicted_total = 0;
  double predicted_per_second = 0;
  double processing = 0;
  double deferred = 0;
  std::string extra = {};  // e.g. the kv_cache_* gauges of older builds
};

std::string llama_metrics(const LlamaState& s) {
  return fmt::format(
      "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
      "# TYPE llamacpp:prompt_tokens_total counter\n"
      "llamacpp:prompt_tokens_total 151\n"
      "# TYPE llamacpp:tokens_predicted_total counter\n"
      "llamacpp:tokens_predicted_total {}\n"
      "# TYPE llamacpp:predicted_tokens_seconds gauge\n"
      "llamacpp:predicted_tokens_seconds {}\n"
      "# TYPE llamacpp:requests_processing gauge\n"
      "llamacpp:requests_processing {}\n"
      "# TYPE llamacpp:requests_deferred gauge\n"
      "llamacpp:requests_deferred {}\n"
      "llamacpp:spec_decode_num_draft_tokens_total 0\n"
      "llamacpp:spec_decode_num_accepted_tokens_total 0\n{}",
      s.predicted_total, s.predicted_per_second, s.processing, s.deferred, s.extra);
}

BackendObservation observe(std::string first, std::string second, double window = 3.0) {
  BackendObservation obs;
  obs.url = "http://127.0.0.1:8000";
  obs.first.metrics = std::move(first);
  obs.second.metrics = std::move(second);
  obs.window_seconds = window;
  return obs;
}

// llama-server's /slots: one busy slot per n_decoded given (current builds'
// next_token[0].n_decoded), then an idle one that keeps its last count.
std::string slots(std::vector<int> decoded) {
  std::string out = "[";
  int id = 0;
  for (int n : decoded) {
    out += fmt::format(
        R"({{"id":{},"n_ctx":1024,"is_processing":true,"id_task":{},"next_token":[{{"has_next_token":true,"n_remain":-1,"n_decoded":{}}}]}},)",
        id, 100 + id, n);
    ++id;
  }
  return out +
         fmt::format(
             R"({{"id":{},"n_ctx":1024,"is_processing":false,"next_token":[{{"n_decoded":999}}]}}])",
             id);
}

BackendObservation observe_llama(const LlamaState& a, std::vector<int> decoded_a,
                                 const LlamaState& b, std::vector<int> decoded_b) {
  auto obs = observe(llama_metrics(a), llama_metrics(b));
  obs.first.slots = slots(std::move(decoded_a));
  obs.second.slots = slots(std::move(decoded_b));
  return obs;
}

const Finding* find(const BackendReport& report, const std::string& check) {
  for (const auto& f : report.findings) {
    if (f.check == check) return &f;
  }
  return nullptr;
}

const Measurement* measured(const BackendReport& report, const std::string& name) {
  for (const auto& m : report.measurements) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Whether `report` has the finding `check` at `severity`, its message saying
// each of `phrases`; a failure says what differs and shows the message.
testing::AssertionResult has_finding(const BackendReport& report, const std::string& check,
                                     Severity severity,
                                     std::initializer_list<std::string> phrases) {
  const Finding* f = find(report, check);
  if (!f) return testing::AssertionFailure() << "no finding " << check;
  if (f->severity != severity)
    return testing::AssertionFailure() << check << " is a " << to_string(f->severity);
  for (const auto& phrase : phrases)
    if (!contains(f->message, phrase))
      return testing::AssertionFailure()
             << check << " does not say \"" << phrase << "\": " << f->message;
  return testing::AssertionSuccess();
}

TEST(BackendChecks, VllmRisingPreemptionsAdviseFewerSequences) {
  VllmState a{.running = 24, .waiting = 0, .kv_usage = 0.8, .preemptions = 100, .generated = 1000};
  VllmState b = a;
  b.preemptions = 120;
  b.generated = 1030;
  const auto report = analyze_backend(observe(vllm_metrics(a), vllm_metrics(b)));
  EXPECT_EQ(report.engine, Engine::vllm);
  EXPECT_TRUE(has_finding(report, "backend.preemptions", Severity::warning,
                          {"preempted 20 requests during the 3.0 s window (120 since start)",
                           "Lower --max-num-seqs", "--max-model-len"}));
  ASSERT_NE(measured(report, "generation_tokens_per_s"), nullptr);
  EXPECT_DOUBLE_EQ(measured(report, "generation_tokens_per_s")->value, 10.0);
}

// --max-model-len 1024 must not be told to drop to 64K–96K.
TEST(BackendChecks, PreemptionAdviceFollowsTheCurrentSettings) {
  VllmState a{.running = 24, .preemptions = 100, .generated = 1000};
  VllmState b = a;
  b.preemptions = 120;
  auto obs = observe(vllm_metrics(a), vllm_metrics(b));
  obs.models = R"({"object":"list","data":[{"id":"m","max_model_len":1024}]})";
  obs.max_num_seqs = 8;
  const auto report = analyze_backend(obs);
  const Finding* f = find(report, "backend.preemptions");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(contains(f->message, "64K")) << f->message;
  EXPECT_FALSE(contains(f->message, "8–12")) << f->message;
  EXPECT_TRUE(contains(f->message, "--max-num-seqs (now 8, halve it)")) << f->message;
  EXPECT_TRUE(contains(f->message, "--max-model-len is 1024 already")) << f->message;

  obs.models = R"({"object":"list","data":[{"id":"m","max_model_len":262144}]})";
  obs.max_num_seqs.reset();
  const auto long_report = analyze_backend(obs);
  const Finding* g = find(long_report, "backend.preemptions");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(contains(g->message, "--max-model-len (now 262144; 64K–96K)")) << g->message;
}

TEST(BackendChecks, VllmOldPreemptionsAreOnlyANote) {
  VllmState a{.running = 2, .preemptions = 7};
  const auto report = analyze_backend(observe(vllm_metrics(a), vllm_metrics(a)));
  const Finding* f = find(report, "backend.preemptions");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::note);
  EXPECT_TRUE(contains(f->message, "7 preemptions since start, none during the window"));
}

TEST(BackendChecks, VllmWaitingWithTheKvPoolFull) {
  VllmState a{
      .running = 24, .waiting = 5, .kv_usage = 0.97, .kv_name = "vllm:gpu_cache_usage_perc"};
  const auto report = analyze_backend(observe(vllm_metrics(a), vllm_metrics(a)));
  EXPECT_TRUE(has_finding(report, "backend.kv_full", Severity::warning,
                          {"5 requests are waiting while the KV pool is 97% full"}));
  EXPECT_EQ(find(report, "backend.waiting"), nullptr);
}

TEST(BackendChecks, VllmWaitingWithRoomInThePoolIsANote) {
  VllmState a{.running = 8, .waiting = 3, .kv_usage = 0.4};
  VllmState b = a;
  b.waiting = 0;
  const auto report = analyze_backend(observe(vllm_metrics(a), vllm_metrics(b)));
  EXPECT_EQ(find(report, "backend.kv_full"), nullptr);
  const Finding* f = find(report, "backend.waiting");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::note);
  EXPECT_TRUE(contains(f->message, "3 requests wait inside the engine with the KV pool at 40%"));
}

TEST(BackendChecks, PrefixCacheQueriedButNeverHit) {
  VllmState a{.prefix_queries = 50000, .prefix_hits = 0};
  VllmState b = a;
  b.prefix_queries = 90000;
  const auto report = analyze_backend(observe(vllm_metrics(a), vllm_metrics(b)));
  EXPECT_TRUE(has_finding(report, "backend.prefix_cache", Severity::warning,
                          {"queried for 40000 tokens during the window and hit none", "hybrid"}));

  VllmState c{.prefix_queries = 50000, .prefix_hits = 20000};
  const auto hitting = analyze_backend(observe(vllm_metrics(c), vllm_metrics(c)));
  EXPECT_EQ(find(hitting, "backend.prefix_cache"), nullptr);
  ASSERT_NE(measured(hitting, "prefix_cache_hit_rate"), nullptr);
  EXPECT_DOUBLE_EQ(measured(hitting, "prefix_cache_hit_rate")->value, 0.4);
}

TEST(BackendChecks, SpeculativeDecodingAcceptance) {
  VllmState a{.running = 1, .draft_tokens = 3000, .accepted_tokens = 900};
  VllmState b = a;
  b.draft_tokens = 6000;
  b.accepted_tokens = 1800;
  const auto low = analyze_backend(observe(vllm_metrics(a), vllm_metrics(b)));
  EXPECT_TRUE(has_finding(low, "backend.spec_decode", Severity::warning,
                          {"accepted 30% of drafted tokens during the window"}));

  VllmState c{.running = 8, .draft_tokens = 1000, .accepted_tokens = 940};
  const auto batched = analyze_backend(observe(vllm_metrics(c), vllm_metrics(c)));
  const Finding* g = find(batched, "backend.spec_decode");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->severity, Severity::note);
  EXPECT_TRUE(contains(g->message, "94% accepted) with 8 requests running"));
}

TEST(BackendChecks, VllmSlotsBeyondTheKvPool) {
  // 26000 blocks × 16 = 416000 tokens; 24 × 180000 wants 4.32 M (BRIEF point 6).
  VllmState a{.running = 24};
  auto obs = observe(vllm_metrics(a), vllm_metrics(a));
  obs.models = R"({"object":"list","data":[{"id":"Qwen3.8-27B","max_model_len":180000}]})";
  obs.max_num_seqs = 24;
  const auto report = analyze_backend(obs);
  EXPECT_TRUE(has_finding(report, "backend.kv_capacity", Severity::warning,
                          {"--max-num-seqs 24 × --max-model-len 180000 = 4320000 tokens",
                           "the pool holds 416000 tokens", "--max-num-seqs 2 at this length"}));

  obs.max_num_seqs.reset();
  const auto unknown = analyze_backend(obs);
  EXPECT_TRUE(has_finding(unknown, "backend.kv_capacity", Severity::note,
                          {"only 2.3 sequences at the full --max-model-len 180000"}));

  obs.max_num_seqs = 2;
  EXPECT_EQ(find(analyze_backend(obs), "backend.kv_capacity"), nullptr);
}

TEST(BackendChecks, VllmLatencyOverTheWindowFromHistograms) {
  VllmState a{.ttft_fast = 10, .ttft_slow = 0, .ttft_sum = 2.0};
  VllmState b{.ttft_fast = 12, .ttft_slow = 2, .ttft_sum = 8.0};
  const auto report = analyze_backend(observe(vllm_metrics(a), vllm_metrics(b)));
  ASSERT_NE(measured(report, "ttft_mean_s"), nullptr);
  EXPECT_DOUBLE_EQ(measured(report, "ttft_mean_s")->value, 1.5);  // 6 s over 4 requests
  ASSERT_NE(measured(report, "ttft_p90_s"), nullptr);
  EXPECT_GT(measured(report, "ttft_p90_s")->value, 0.5);
  EXPECT_EQ(find(report, "backend.latency_skew"), nullptr);  // mean 1.5 s under p90 4.1 s
}

// A vLLM page whose only content is a TTFT histogram: cumulative counts at
// le 0.5, 5 and +Inf, and the sum of the observations.
std::string ttft_page(double at_half, double at_five, double total, double sum) {
  return fmt::format(
      "vllm:num_requests_running 1\n"
      "vllm:time_to_first_token_seconds_bucket{{le=\"0.5\"}} {}\n"
      "vllm:time_to_first_token_seconds_bucket{{le=\"5.0\"}} {}\n"
      "vllm:time_to_first_token_seconds_bucket{{le=\"+Inf\"}} {}\n"
      "vllm:time_to_first_token_seconds_count {}\n"
      "vllm:time_to_first_token_seconds_sum {}\n",
      at_half, at_five, total, total, sum);
}

TEST(BackendChecks, TtftMeanAboveP90IsExplainedBesideIt) {
  const std::string empty = ttft_page(0, 0, 0, 0);
  // Nine requests at 0.1 s, one at 30 s: mean 3.09 s, p90 0.5 s. The fastest
  // nine took ≤ 0.5 s each, so the slowest one took ≥ 30.9 − 4.5 = 26.4 s.
  auto report = analyze_backend(observe(empty, ttft_page(9, 9, 10, 30.9)));
  EXPECT_NEAR(measured(report, "ttft_mean_s")->value, 3.09, 1e-9);
  EXPECT_DOUBLE_EQ(measured(report, "ttft_p90_s")->value, 0.5);
  const Finding* f = find(report, "backend.latency_skew");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::note);
  EXPECT_TRUE(contains(f->message, "TTFT mean 3.09 s is above its p90 0.50 s over the 10 requests"))
      << f->message;
  EXPECT_TRUE(contains(f->message, "the slowest 10% averaged at least 26.40 s")) << f->message;

  // Two of ten past the largest finite bucket: the p90 shown (5 s) is a floor.
  report = analyze_backend(observe(empty, ttft_page(5, 8, 10, 126.5)));
  f = find(report, "backend.latency_skew");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(contains(f->message, "beyond the histogram's largest bucket (5 s)")) << f->message;
  EXPECT_TRUE(contains(f->message, "5.00 s is only a lower bound")) << f->message;

  // All ten inside (0, 0.5]: the p90 is interpolated (0.45 s), the mean 0.46 s.
  report = analyze_backend(observe(empty, ttft_page(10, 10, 10, 4.6)));
  f = find(report, "backend.latency_skew");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(contains(f->message, "interpolated inside the bucket (0 s, 0.5 s]")) << f->message;
}

// Two scrapes that disagree: 3 waiting with the pool 83% full, then none
// waiting at 77%. The table's "KV in use" and the note name the same scrape.
TEST(BackendChecks, OneKvInUseFigurePerReport) {
  VllmState a{.running = 8, .waiting = 3, .kv_usage = 0.83};
  VllmState b{.running = 8, .waiting = 0, .kv_usage = 0.77};
  const auto report = analyze_backend(observe(vllm_metrics(a), vllm_metrics(b)));
  ASSERT_NE(measured(report, "kv_cache_usage"), nullptr);
  EXPECT_DOUBLE_EQ(measured(report, "kv_cache_usage")->value, 0.83);
  EXPECT_DOUBLE_EQ(measured(report, "requests_waiting")->value, 3);
  const Finding* f = find(report, "backend.waiting");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(contains(f->message, "with the KV pool at 83%")) << f->message;

  // Nobody waiting at either end: the fuller scrape.
  a.waiting = 0;
  const auto calm = analyze_backend(observe(vllm_metrics(a), vllm_metrics(b)));
  EXPECT_DOUBLE_EQ(measured(calm, "kv_cache_usage")->value, 0.83);
  EXPECT_EQ(find(calm, "backend.waiting"), nullptr);
}

TEST(BackendChecks, RestartBetweenScrapesStopsTheAnalysis) {
  VllmState a{.preemptions = 50, .generated = 9000};
  VllmState b{.preemptions = 0, .generated = 10};
  const auto report = analyze_backend(observe(vllm_metrics(a), vllm_metrics(b)));
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].check, "backend.restarted");
}

TEST(BackendChecks, LlamaCppOverReportingItsSpeed) {
  // 150 tokens in 3 s is 50 tok/s by the wall clock; the server claims 600.
  LlamaState a{.predicted_total = 1000, .predicted_per_second = 580, .processing = 2};
  LlamaState b{.predicted_total = 1150, .predicted_per_second = 600, .processing = 2};
  const auto report = analyze_backend(observe_llama(a, {10, 20}, b, {10, 20}));
  EXPECT_EQ(report.engine, Engine::llama_cpp);
  EXPECT_TRUE(has_finding(report, "backend.self_report", Severity::warning,
                          {"reports 600.0 tok/s (llamacpp:predicted_tokens_seconds) but generated "
                           "50.0 tok/s over the 3.0 s window (tokens/wall), 12.0× less",
                           "Trust tokens/wall"}));
}

TEST(BackendChecks, LlamaCppHonestSpeedIsNotFlagged) {
  LlamaState a{.predicted_total = 1000, .predicted_per_second = 55, .processing = 1};
  LlamaState b{.predicted_total = 1150, .predicted_per_second = 55, .processing = 1};
  const auto report = analyze_backend(observe_llama(a, {40}, b, {40}));
  EXPECT_EQ(find(report, "backend.self_report"), nullptr);  // 55 / 50 = 1.1, under 1.2
  EXPECT_TRUE(report.findings.empty());
}

TEST(BackendChecks, LlamaCppIdleAtOneEndIsOnlyANote) {
  LlamaState a{.predicted_total = 1000, .predicted_per_second = 600, .processing = 0};
  LlamaState b{.predicted_total = 1150, .predicted_per_second = 600, .processing = 2};
  const auto report = analyze_backend(observe_llama(a, {}, b, {0, 0}));
  const Finding* f = find(report, "backend.self_report");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::note);
  EXPECT_TRUE(contains(f->message, "idle at one end of the window"));
}

TEST(BackendChecks, LlamaCppIdleThroughoutSaysTheCheckDidNotRun) {
  LlamaState a{.predicted_total = 1000, .predicted_per_second = 600};
  const auto report = analyze_backend(observe(llama_metrics(a), llama_metrics(a)));
  const Finding* f = find(report, "backend.idle");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::note);
}

// The field report: two long requests decoding through the whole window,
// none finished, so tokens_predicted_total did not move.
TEST(BackendChecks, LlamaCppBusyWithLongRequestsDoesNotLookIdle) {
  LlamaState a{.predicted_total = 500, .predicted_per_second = 50, .processing = 2};
  LlamaState b = a;
  const auto report = analyze_backend(observe_llama(a, {100, 200}, b, {250, 350}));
  ASSERT_NE(measured(report, "generation_tokens_per_s"), nullptr);
  EXPECT_DOUBLE_EQ(measured(report, "generation_tokens_per_s")->value, 300.0 / 3);
  EXPECT_EQ(find(report, "backend.idle"), nullptr);

  // One finished during the window (its 260 tokens, 100 of them before it),
  // a new one started and decoded 40: 160 + 150 + 40.
  LlamaState c{.predicted_total = 760, .predicted_per_second = 50, .processing = 2};
  const auto turned = analyze_backend(observe_llama(a, {100, 200}, c, {40, 350}));
  EXPECT_DOUBLE_EQ(measured(turned, "generation_tokens_per_s")->value, 350.0 / 3);

  // Without /slots a busy server's figure is said to be unavailable, not 0.
  const auto blind = analyze_backend(observe(llama_metrics(a), llama_metrics(b)));
  EXPECT_EQ(measured(blind, "generation_tokens_per_s"), nullptr);
  EXPECT_EQ(find(blind, "backend.idle"), nullptr);
  const Finding* f = find(blind, "backend.generation");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(contains(f->message, "unavailable")) << f->message;
  ASSERT_EQ(std::count_if(blind.findings.begin(), blind.findings.end(),
                          [](const Finding& x) { return x.check == "backend.generation"; }),
            1);
}

TEST(BackendChecks, LlamaCppSlotsBeyondTheKvPool) {
  // An older build publishes kv_cache_tokens and kv_cache_usage_ratio: 1000
  // tokens at 25% means a 4000-token pool, which 4 slots × 4096 overrun.
  LlamaState a{.predicted_total = 10,
               .extra =
                   "llamacpp:kv_cache_usage_ratio 0.25\n"
                   "llamacpp:kv_cache_tokens 1000\n"};
  auto obs = observe(llama_metrics(a), llama_metrics(a));
  obs.second.props = R"({"default_generation_settings":{"n_ctx":4096},"total_slots":4})";
  obs.second.slots = R"([{"id":0,"n_ctx":4096,"is_processing":true},
                         {"id":1,"n_ctx":4096,"is_processing":false}])";
  const auto report = analyze_backend(obs);
  EXPECT_TRUE(
      has_finding(report, "backend.kv_capacity", Severity::warning,
                  {"4 slots × n_ctx 4096 = 16384 tokens, but the KV pool holds about 4000"}));
  ASSERT_NE(measured(report, "slots_busy"), nullptr);
  EXPECT_EQ(measured(report, "slots_busy")->value, 1);

  obs.second.props = R"({"default_generation_settings":{"n_ctx":1000},"total_slots":4})";
  EXPECT_EQ(find(analyze_backend(obs), "backend.kv_capacity"), nullptr);
}

std::string reference(const std::string& name) {
  std::ifstream in(std::string(SWITCHYARD_SHARED_DIR) + "/reference/llamacpp/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(BackendChecks, RealLlamaServerCaptures) {
  auto obs = observe(reference("metrics_before.body"), reference("metrics.body"));
  obs.first.props = obs.second.props = reference("props.body");
  obs.second.slots = reference("slots_busy.body");
  ASSERT_FALSE(obs.first.metrics->empty());
  ASSERT_FALSE(obs.second.props->empty());
  const auto report = analyze_backend(obs);
  EXPECT_EQ(report.engine, Engine::llama_cpp);
  ASSERT_NE(measured(report, "slots"), nullptr);
  EXPECT_EQ(measured(report, "slots")->value, 2);                   // -np 2
  EXPECT_EQ(measured(report, "slot_context_tokens")->value, 1024);  // -c 2048 split in two
  EXPECT_EQ(measured(report, "slots_busy")->value, 2);
  EXPECT_EQ(find(report, "backend.kv_capacity"), nullptr);  // this build publishes no pool size
}

TEST(BackendChecks, MissingOrForeignMetrics) {
  BackendObservation none;
  none.url = "http://127.0.0.1:8080";
  none.first.props = "{}";
  const auto missing = analyze_backend(none);
  ASSERT_EQ(missing.findings.size(), 1u);
  EXPECT_EQ(missing.findings[0].check, "backend.metrics");
  EXPECT_EQ(missing.findings[0].severity, Severity::warning);
  EXPECT_TRUE(contains(missing.findings[0].message, "--metrics"));

  const auto foreign =
      analyze_backend(observe("http_requests_total 5\n", "http_requests_total 9\n"));
  EXPECT_EQ(foreign.engine, Engine::unknown);
  ASSERT_EQ(foreign.findings.size(), 1u);
  EXPECT_EQ(foreign.findings[0].check, "backend.engine");
  EXPECT_EQ(foreign.findings[0].severity, Severity::note);

  const auto broken = analyze_backend(observe("vllm:x 1\n", "vllm:x{ 1\n"));
  ASSERT_EQ(broken.findings.size(), 1u);
  EXPECT_TRUE(contains(broken.findings[0].message, "line 1"));
}

}  // namespace
}  // namespace switchyard::advisor
