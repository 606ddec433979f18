#include "sim/scheduler.h"

#include <gtest/gtest.h>

#include <numeric>

#include "closed_loop.h"

namespace switchyard::sim {
namespace {

std::vector<Token> prompt_of(int n, Token first = 100) {
  std::vector<Token> p(n);
  std::iota(p.begin(), p.end(), first);
  return p;
}

SeqRequest req(std::vector<Token> prompt, int n_out) {
  SeqRequest r;
  r.prompt = std::move(prompt);
  r.n_out = n_out;
  return r;
}

// Steps until nothing is left; returns the events of every step.
std::vector<Step> run(Scheduler& s) {
  std::vector<Step> steps;
  while (s.has_work()) steps.push_back(s.step());
  return steps;
}

SchedulerOptions slots(int n) {
  SchedulerOptions o;
  o.max_seqs = n;
  o.slot_context = 4096;
  o.timing.decode_curve = {{1, 0.010}, {2, 0.012}, {4, 0.016}};
  o.timing.prefill_tokens_per_second = 1000;
  return o;
}

SchedulerOptions paged(int kv_tokens, int max_seqs = 8) {
  SchedulerOptions o = slots(max_seqs);
  o.mode = SchedulerMode::paged;
  o.kv_capacity_tokens = kv_tokens;
  o.block_size = 16;
  o.max_batched_tokens = 8192;
  return o;
}

TEST(Scheduler, OneStepDecodesEveryRunningSequenceAtTheBatchStepTime) {
  Scheduler s(slots(4));
  for (int i = 0; i < 4; ++i) s.submit(req(prompt_of(10, 100 * (i + 1)), 5));
  EXPECT_EQ(s.admit().size(), 4u);
  // Step 1: the four prompts (40 tokens at 1000 tok/s), each yielding its first token.
  Step first = s.step();
  EXPECT_DOUBLE_EQ(first.seconds, 0.040);
  EXPECT_EQ(first.prefill_tokens, 40);
  EXPECT_EQ(first.events.size(), 4u);
  // Then one token per sequence per step, at the 4-sequence step time.
  Step second = s.step();
  EXPECT_EQ(second.decode_seqs, 4);
  EXPECT_DOUBLE_EQ(second.seconds, 0.016);
  for (const auto& e : second.events) EXPECT_EQ(e.tokens.size(), 1u);
  auto rest = run(s);
  EXPECT_EQ(rest.size(), 3u);  // 5 tokens: 1 with the prompt + 4 decode steps
  for (const auto& e : rest.back().events) EXPECT_TRUE(e.finished);
  EXPECT_EQ(s.running(), 0);
}

TEST(Scheduler, RequestsBeyondTheSlotsWaitInOrder) {
  Scheduler s(slots(1));
  const SeqId a = s.submit(req(prompt_of(4), 2));
  const SeqId b = s.submit(req(prompt_of(4, 500), 2));
  EXPECT_EQ(s.admit(), std::vector<SeqId>{a});
  EXPECT_EQ(s.waiting(), 1);
  EXPECT_TRUE(s.is_waiting(b));
  s.step();
  Step done = s.step();
  ASSERT_TRUE(done.events.back().finished);
  EXPECT_EQ(s.admit(), std::vector<SeqId>{b});
}

TEST(Scheduler, LongPromptsPrefillInChunksWhileOthersDecode) {
  auto o = slots(2);
  o.max_batched_tokens = 512;
  Scheduler s(o);
  s.submit(req(prompt_of(8), 100));
  s.admit();
  s.step();  // the short one is decoding now
  s.submit(req(prompt_of(1200, 2000), 4));
  s.admit();
  Step step = s.step();
  EXPECT_EQ(step.decode_seqs, 1);
  EXPECT_EQ(step.prefill_tokens, 511);  // the budget less one decode token
  EXPECT_DOUBLE_EQ(step.seconds, 0.010 + 0.511);
}

// vLLM V1's default scheduler (vllm/v1/core/sched/scheduler.py, schedule();
// long_prefill_token_threshold 0, vllm/config/scheduler.py): running
// requests are scheduled first, each with min(remaining, token_budget), so a
// long prompt being prefilled takes the whole budget every step, and a
// waiting request gets tokens only from what its last chunk leaves over.
TEST(Scheduler, PagedShortRequestBehindALongPrefillWaitsForAllOfIt) {
  Scheduler s(paged(65536));
  const SeqId big = s.submit(req(prompt_of(40000), 4));
  s.step();  // the first chunk: the long prompt is running
  const SeqId small = s.submit(req(prompt_of(100, 90000), 4));
  int steps = 1, big_done = 0, small_first = 0;
  while (!big_done || !small_first) {
    Step step = s.step();
    ++steps;
    for (const auto& e : step.events) {
      if (e.id == big && e.prefill_done) big_done = steps;
      if (e.id == small && e.prefill_done) small_first = steps;
    }
    ASSERT_LT(steps, 100);
  }
  EXPECT_EQ(big_done, 5);  // 40000 tokens in chunks of 8192
  EXPECT_EQ(small_first, big_done);
}

TEST(Scheduler, SlotReusesTheCommonPrefixWithItsLastPrompt) {
  Scheduler s(slots(2));
  s.submit(req(prompt_of(100), 3));
  s.admit();
  run(s);
  // Same first 80 tokens: 80 come from cache.
  auto p = prompt_of(100);
  for (int i = 80; i < 100; ++i) p[i] = 9000 + i;
  s.submit(req(p, 3));
  s.admit();
  Step first = s.step();
  ASSERT_TRUE(first.events[0].prefill_done);
  EXPECT_EQ(first.events[0].cached, 80);
  EXPECT_EQ(first.prefill_tokens, 20);
  run(s);
  // An identical prompt still evaluates its last token.
  s.submit(req(p, 1));
  s.admit();
  EXPECT_EQ(s.step().events[0].cached, 99);
  // cache_prompt: false reuses nothing.
  SeqRequest fresh = req(p, 1);
  fresh.cache_prompt = false;
  s.submit(fresh);
  s.admit();
  EXPECT_EQ(s.step().events[0].cached, 0);
}

TEST(Scheduler, PicksTheSlotThatHoldsThePrefix) {
  Scheduler s(slots(2));
  s.submit(req(prompt_of(50, 100), 1));
  s.submit(req(prompt_of(50, 900), 1));
  s.admit();
  run(s);
  const auto before = s.slots();
  s.submit(req(prompt_of(60, 900), 1));
  s.admit();
  const auto views = s.slots();
  EXPECT_TRUE(views[1].busy);
  EXPECT_EQ(views[1].n_cached, 50);
  EXPECT_FALSE(views[0].busy);
  EXPECT_TRUE(before[0].used);
}

TEST(Scheduler, HeldSequenceKeepsItsSlotAndStopsComputing) {
  Scheduler s(slots(1));
  const SeqId a = s.submit(req(prompt_of(4), 50));
  s.admit();
  s.step();
  s.hold(a);
  EXPECT_FALSE(s.has_work());
  s.submit(req(prompt_of(4), 1));
  EXPECT_TRUE(s.admit().empty());
  s.cancel(a);
  EXPECT_EQ(s.admit().size(), 1u);
}

TEST(Scheduler, PagedPoolPreemptsExactlyWhenItOverflows) {
  // 64 blocks of 16 = 1024 tokens. A sequence of 200 + 300 tokens peaks at
  // ceil(504 / 16) = 32 blocks: two fit exactly, three do not.
  for (int n : {1, 2, 3}) {
    Scheduler s(paged(1024));
    for (int i = 0; i < n; ++i) s.submit(req(prompt_of(200, 1000 * (i + 1)), 300));
    s.admit();
    long tokens = 0;
    bool newest_preempted_first = true;
    SeqId newest = static_cast<SeqId>(n);
    while (s.has_work()) {
      for (const auto& e : s.step().events) {
        tokens += static_cast<long>(e.tokens.size());
        if (e.preempted && s.counters().preemptions == 1) newest_preempted_first = e.id == newest;
      }
    }
    EXPECT_EQ(tokens, 300L * n) << "every sequence still completes";
    if (n <= 2) {
      EXPECT_EQ(s.counters().preemptions, 0u) << n;
    } else {
      EXPECT_GT(s.counters().preemptions, 0u);
      EXPECT_TRUE(newest_preempted_first);
    }
  }
}

TEST(Scheduler, PagedWaitsForBlocksBeforeAdmitting) {
  Scheduler s(paged(1024));
  s.submit(req(prompt_of(600), 10));
  s.submit(req(prompt_of(600, 5000), 10));
  EXPECT_EQ(s.admit().size(), 1u);  // 38 + 38 blocks > 64
  EXPECT_EQ(s.waiting(), 1);
  EXPECT_NEAR(s.kv_usage(), 38.0 / 64, 1e-9);
}

TEST(Scheduler, PagedPrefixCacheHitsFullBlocksAcrossRequests) {
  Scheduler s(paged(4096));
  s.submit(req(prompt_of(100), 2));
  s.admit();
  run(s);
  EXPECT_EQ(s.counters().prefix_queries, 100u);
  EXPECT_EQ(s.counters().prefix_hits, 0u);
  // Same 100-token prompt: the 6 full blocks (96 tokens) are cached.
  s.submit(req(prompt_of(100), 2));
  s.admit();
  Step first = s.step();
  EXPECT_EQ(first.events[0].cached, 96);
  EXPECT_EQ(first.prefill_tokens, 4);
  EXPECT_EQ(s.counters().prefix_hits, 96u);
  EXPECT_EQ(s.counters().prefix_queries, 200u);
  run(s);
  // A prompt that shares 40 tokens hits 2 blocks.
  auto p = prompt_of(100);
  for (int i = 40; i < 100; ++i) p[i] = 7000 + i;
  s.submit(req(p, 1));
  s.admit();
  EXPECT_EQ(s.step().events[0].cached, 32);
}

TEST(Scheduler, SpeculativeDecodingEmitsAcceptedDrafts) {
  auto o = slots(1);
  o.timing.spec_draft_tokens = 3;
  o.timing.spec_acceptance = 0.6;
  Scheduler s(o);
  s.submit(req(prompt_of(10), 400));
  s.admit();
  auto steps = run(s);
  long drafts = 0;
  long accepted = 0;
  long tokens = 0;
  for (const auto& st : steps) {
    drafts += st.drafts;
    accepted += st.accepted_tokens;
    for (const auto& e : st.events) tokens += static_cast<long>(e.tokens.size());
    if (st.decode_seqs > 0) {
      EXPECT_DOUBLE_EQ(st.seconds, 0.016);  // 1 sequence x 4 tokens
    }
  }
  EXPECT_EQ(tokens, 400);
  const double per_step = static_cast<double>(tokens - 1) / drafts;
  EXPECT_NEAR(per_step, 1 + 0.6 + 0.36 + 0.216, 0.2);
  EXPECT_GT(accepted, 0);
}

TEST(Scheduler, ThroughputFollowsTheDecodeCurve) {
  // Prompts of one token, so decode dominates: N / step(N) tok/s.
  auto o = slots(4);
  o.timing.prefill_tokens_per_second = 1e9;
  for (int n : {1, 2, 4}) {
    const auto r = testing::closed_loop(o, n, 2, 1, 200);
    const double want = n / TimingModel(o.timing).decode_seconds(n);
    EXPECT_NEAR(r.tokens_per_second(), want, want * 0.01) << n;
  }
}

}  // namespace
}  // namespace switchyard::sim
