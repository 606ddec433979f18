#include "sim/host_prompt_cache.h"

#include <gtest/gtest.h>

#include <numeric>

#include "sim/scheduler.h"

namespace switchyard::sim {
namespace {

std::vector<Token> tokens_from(int n, Token first) {
  std::vector<Token> p(n);
  std::iota(p.begin(), p.end(), first);
  return p;
}

SchedulerOptions one_slot(int cache_ram_mib) {
  SchedulerOptions o;
  o.max_seqs = 1;
  o.slot_context = 4096;
  o.timing.decode_curve = {{1, 0.010}};
  o.timing.prefill_tokens_per_second = 1000;
  o.cache_ram_mib = cache_ram_mib;
  return o;
}

// Runs one request to its end; returns the prompt tokens served from cache.
int run_one(Scheduler& s, std::vector<Token> prompt) {
  SeqRequest r;
  r.prompt = std::move(prompt);
  r.n_out = 4;
  s.submit(std::move(r));
  int cached = -1;
  while (s.has_work())
    for (const auto& e : s.step().events)
      if (e.prefill_done) cached = e.cached;
  return cached;
}

TEST(HostPromptCache, APromptEvictedFromItsSlotByAnotherSessionIsRestored) {
  Scheduler s(one_slot(8192));
  const auto a = tokens_from(1000, 1);
  const auto b = tokens_from(1000, 5000);
  EXPECT_EQ(run_one(s, a), 0);
  EXPECT_EQ(run_one(s, b), 0);  // takes the only slot: a is saved to RAM
  auto a2 = a;
  a2.insert(a2.end(), 200, 7);  // the next turn of a's session
  EXPECT_EQ(run_one(s, a2), 1000);
  EXPECT_EQ(run_one(s, b), 999);  // b was saved in turn (all but the last token evaluated)
}

TEST(HostPromptCache, OffItKeepsOnlyEachSlotsLastPrompt) {
  Scheduler s(one_slot(0));
  const auto a = tokens_from(1000, 1);
  EXPECT_EQ(run_one(s, a), 0);
  EXPECT_EQ(run_one(s, tokens_from(1000, 5000)), 0);
  EXPECT_EQ(run_one(s, a), 0);
}

TEST(HostPromptCache, ARestoreCostsTheCopyNotAPrefill) {
  Scheduler on(one_slot(8192));
  Scheduler off(one_slot(0));
  const auto a = tokens_from(2000, 1);
  const auto b = tokens_from(2000, 9000);
  for (Scheduler* s : {&on, &off}) {
    run_one(*s, a);
    run_one(*s, b);
  }
  const auto seconds = [&](Scheduler& s) {
    SeqRequest r;
    r.prompt = a;
    r.n_out = 1;
    s.submit(std::move(r));
    double t = 0;
    while (s.has_work()) t += s.step().seconds;
    return t;
  };
  const double restored = seconds(on);
  EXPECT_GT(restored, 0.0);
  EXPECT_LT(restored, seconds(off) / 10);
}

TEST(HostPromptCache, OldestEntriesGoPastTheByteLimit) {
  HostPromptCache cache(/*limit_bytes=*/2500, /*limit_tokens=*/0, /*bytes_per_token=*/1);
  EXPECT_EQ(cache.save(tokens_from(1000, 1)), 1000u);
  EXPECT_EQ(cache.save(tokens_from(1000, 5000)), 1000u);
  EXPECT_EQ(cache.save(tokens_from(1000, 9000)), 1000u);  // the first goes
  EXPECT_EQ(cache.entries(), 2u);
  EXPECT_EQ(cache.save(tokens_from(3000, 20000)), 0u);  // larger than the limit: skipped
  std::vector<Token> slot;
  EXPECT_EQ(cache.load(slot, tokens_from(1000, 1)), 0u);
  EXPECT_EQ(cache.load(slot, tokens_from(1000, 5000)), 1000u);
  EXPECT_EQ(slot, tokens_from(1000, 5000));
  EXPECT_EQ(cache.entries(), 1u);  // restored entries leave the cache
}

TEST(HostPromptCache, AnEntryHeldWholeIsNotSavedAgainAndAGrownPromptReplacesIt) {
  HostPromptCache cache(0, 1 << 20, 1);
  const auto a = tokens_from(100, 1);
  EXPECT_EQ(cache.save(a), 100u);
  EXPECT_EQ(cache.save(a), 0u);
  EXPECT_EQ(cache.save(tokens_from(50, 1)), 0u);  // a prefix of an entry
  EXPECT_EQ(cache.save(tokens_from(150, 1)), 150u);
  EXPECT_EQ(cache.entries(), 1u);
  EXPECT_EQ(cache.tokens(), 150u);
}

TEST(HostPromptCache, AnEntryLessThanAQuarterSharedIsNotRestored) {
  HostPromptCache cache(0, 1 << 20, 1);
  cache.save(tokens_from(1000, 1));
  std::vector<Token> slot;
  auto p = tokens_from(200, 1);
  p.push_back(-1);
  EXPECT_EQ(cache.load(slot, p), 0u);  // 200 of 1000: a large prompt is not thrashed
  EXPECT_TRUE(slot.empty());
}

}  // namespace
}  // namespace switchyard::sim
