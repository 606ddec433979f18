#include <gtest/gtest.h>

#include <cmath>

#include "profiles/switch_policy.h"

namespace switchyard::profiles {
namespace {

using namespace std::chrono_literals;

// The reports' box: two single-card replicas, or one TP2 engine over both.
InstanceSpeed card(std::string name, double decode) {
  return {std::move(name), 1, InstanceEstimate{decode, 900, 46500, 196608}};
}

std::vector<ProfileSpeed> box() {
  return {ProfileSpeed{"replicas", {card("xtx0", 59.4), card("xtx1", 46.1)}},
          ProfileSpeed{"tp2", {{"tp2", 8, InstanceEstimate{20.5, 3377, 65000, 163840}}}}};
}

SwitchingOptions options() {
  SwitchingOptions o;
  o.mode = SwitchingOptions::Mode::on_demand;
  o.queue_depth = 8;
  o.sustain = 10s;
  o.prefill_bound = 120s;
  o.min_dwell = 5min;
  o.idle = 2min;
  o.switch_cost = 20s;
  return o;
}

Demand queued(int n, long prompt, long output) {
  Demand d;
  for (int i = 0; i < n; ++i) d.waiting.push_back({prompt, output});
  return d;
}

const steady_time t0{};

TEST(ProfilePolicy, EstimatesTheMakespanOverSlots) {
  SwitchPolicy p(box(), options());
  // One 2K/256 request on the faster card: 2048 tokens of prefill plus 256 decoded.
  const auto one = p.finish_seconds(box()[0], {{2048, 256}});
  ASSERT_TRUE(one);
  EXPECT_NEAR(*one, prefill_seconds(box()[0].instances[0].estimate, 2048) + 256 / 59.4, 1e-9);
  // Sixteen of them: eight slots on TP2 beat two single-slot cards.
  const auto jobs = queued(16, 2048, 256).waiting;
  EXPECT_LT(*p.finish_seconds(box()[1], jobs), *p.finish_seconds(box()[0], jobs));
  // A prompt past every slot's context fits nowhere.
  EXPECT_FALSE(p.finish_seconds(box()[1], {{200000, 10}}));
}

TEST(ProfilePolicy, SwitchesForAHugePromptAtOnce) {
  SwitchPolicy p(box(), options());
  Demand d;
  d.waiting.push_back({130000, 256});
  const auto decision = p.decide("replicas", d, t0);
  ASSERT_TRUE(decision);
  EXPECT_EQ(decision->target, "tp2");
  EXPECT_EQ(decision->reason, "huge_prompt");
  // The numbers are in the explanation.
  EXPECT_NE(p.last_explanation().find("on replicas vs"), std::string::npos) << p.last_explanation();
  EXPECT_NE(p.last_explanation().find("20 s switch on tp2"), std::string::npos);
}

TEST(ProfilePolicy, StaysWhenTheSwitchCostsMoreThanItSaves) {
  auto o = options();
  o.switch_cost = 600s;  // a reload far slower than the work
  SwitchPolicy p(box(), o);
  Demand d;
  d.waiting.push_back({130000, 256});
  EXPECT_FALSE(p.decide("replicas", d, t0));
  EXPECT_NE(p.last_explanation().find("staying on replicas"), std::string::npos)
      << p.last_explanation();
}

TEST(ProfilePolicy, QueueTriggerMustBeSustained) {
  SwitchPolicy p(box(), options());
  const auto d = queued(16, 2048, 256);
  EXPECT_FALSE(p.decide("replicas", d, t0));
  EXPECT_FALSE(p.decide("replicas", d, t0 + 9s));
  const auto decision = p.decide("replicas", d, t0 + 10s);
  ASSERT_TRUE(decision);
  EXPECT_EQ(decision->target, "tp2");
  EXPECT_EQ(decision->reason, "queue");
  // A dip below the depth restarts the window.
  SwitchPolicy q(box(), options());
  EXPECT_FALSE(q.decide("replicas", d, t0));
  EXPECT_FALSE(q.decide("replicas", queued(2, 2048, 256), t0 + 5s));
  EXPECT_FALSE(q.decide("replicas", d, t0 + 12s));
}

TEST(ProfilePolicy, AShortQueueDoesNotPayForASwitch) {
  auto o = options();
  o.queue_depth = 2;
  SwitchPolicy p(box(), o);
  const auto d = queued(2, 100, 16);  // seconds of work against a 20 s switch
  EXPECT_FALSE(p.decide("replicas", d, t0));
  EXPECT_FALSE(p.decide("replicas", d, t0 + 30s));
  EXPECT_NE(p.last_explanation().find("staying on replicas (queue"), std::string::npos)
      << p.last_explanation();
}

TEST(ProfilePolicy, MinDwellHolds) {
  SwitchPolicy p(box(), options());
  p.switched("replicas", "tp2", 18, true, t0);
  // Idle on TP2 right after the switch: not back before min_dwell.
  EXPECT_FALSE(p.decide("tp2", Demand{}, t0 + 1s));
  EXPECT_FALSE(p.decide("tp2", Demand{}, t0 + 4min));
  EXPECT_NE(p.last_explanation().find("min_dwell"), std::string::npos) << p.last_explanation();
  const auto back = p.decide("tp2", Demand{}, t0 + 5min);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->target, "replicas");
  EXPECT_EQ(back->reason, "idle");
}

TEST(ProfilePolicy, BackToTheDailyProfileOnlyAfterTheIdleWindow) {
  SwitchPolicy p(box(), options());
  p.switched("replicas", "tp2", 18, true, t0);
  Demand busy;
  busy.in_flight = 1;
  EXPECT_FALSE(p.decide("tp2", busy, t0 + 6min));
  EXPECT_FALSE(p.decide("tp2", Demand{}, t0 + 7min));  // idle starts here
  EXPECT_FALSE(p.decide("tp2", Demand{}, t0 + 8min));
  EXPECT_TRUE(p.decide("tp2", Demand{}, t0 + 9min));
}

// The compressed day: a chat trickle keeps TP2 busy after the 130K prompt
// that TP2 was switched on for. Waiting for "nothing in flight" would keep
// the whole day on TP2 (slow decode for every chat); once the big prompt is
// done by estimate, and idle has passed, it goes back.
TEST(ProfilePolicy, ATrickleDoesNotKeepTheProfileOnceTheHugePromptIsDone) {
  SwitchPolicy p(box(), options());
  Demand big;
  big.waiting.push_back({130000, 256});
  ASSERT_TRUE(p.decide("replicas", big, t0));
  p.switched("replicas", "tp2", 18, true, t0 + 18s);
  Demand trickle;
  trickle.in_flight = 1;
  trickle.waiting.push_back({2048, 128});
  // The 130K prompt runs for ~90 s on TP2 (est.): 18 s + 90 s + idle 2 min.
  EXPECT_FALSE(p.decide("tp2", trickle, t0 + 3min));
  EXPECT_FALSE(p.decide("tp2", trickle, t0 + 5min)) << "min_dwell";
  const auto back = p.decide("tp2", trickle, t0 + 5min + 30s);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->target, "replicas");
  EXPECT_EQ(back->reason, "idle");
  EXPECT_NE(p.last_explanation().find("done by estimate"), std::string::npos)
      << p.last_explanation();
}

TEST(ProfilePolicy, AnotherHugePromptOnTheProfileKeepsIt) {
  SwitchPolicy p(box(), options());
  Demand big;
  big.waiting.push_back({130000, 256});
  ASSERT_TRUE(p.decide("replicas", big, t0));
  p.switched("replicas", "tp2", 18, true, t0 + 18s);
  Demand busy;
  busy.in_flight = 1;
  // A second huge prompt waits on TP2 at 5 min: needed until it is done + idle.
  Demand second = big;
  second.in_flight = 1;
  EXPECT_FALSE(p.decide("tp2", second, t0 + 5min));
  EXPECT_FALSE(p.decide("tp2", busy, t0 + 7min));
  EXPECT_TRUE(p.decide("tp2", busy, t0 + 9min));
}

TEST(ProfilePolicy, UsesTheMeasuredSwitchCost) {
  SwitchPolicy p(box(), options());
  EXPECT_EQ(p.switch_cost("replicas", "tp2"), 20);
  p.switched("replicas", "tp2", 41.5, true, t0);
  EXPECT_EQ(p.switch_cost("replicas", "tp2"), 41.5);
  EXPECT_EQ(p.switch_cost("tp2", "replicas"), 20);
  p.switched("tp2", "replicas", 99, false, t0);  // rolled back: no measurement
  EXPECT_EQ(p.switch_cost("tp2", "replicas"), 20);
}

TEST(ProfilePolicy, NeverChoosesAProfileWithoutSeeds) {
  auto profiles = box();
  profiles[1].instances[0].estimate.decode_tps = 0;
  SwitchPolicy p(profiles, options());
  Demand d;
  d.waiting.push_back({130000, 256});
  EXPECT_FALSE(p.decide("replicas", d, t0));
}

TEST(ProfilePolicy, KnowsAnInstanceBusyWithALongPrefillUntilItsEstimatedEnd) {
  SwitchPolicy p(box(), options());
  const double prefill = prefill_seconds(box()[1].instances[0].estimate, 130000);  // ~104 s
  // A chat turn is not long; nothing is held for it.
  EXPECT_FALSE(p.started("tp2", {500, 256}, t0, 30s));
  EXPECT_FALSE(p.long_prefill("tp2", t0));
  // The 130K prompt is: TP2 is busy with it until its estimated end.
  EXPECT_TRUE(p.started("tp2", {130000, 256}, t0, 30s));
  EXPECT_TRUE(p.long_prefill("tp2", t0 + 1s));
  EXPECT_TRUE(p.long_prefill("tp2", t0 + std::chrono::seconds(static_cast<int>(prefill) - 1)));
  EXPECT_FALSE(p.long_prefill("tp2", t0 + std::chrono::seconds(static_cast<int>(prefill) + 1)));
  EXPECT_FALSE(p.long_prefill("xtx0", t0 + 1s));
  // A later short request does not shorten it.
  EXPECT_FALSE(p.started("tp2", {500, 256}, t0 + 2s, 30s));
  EXPECT_TRUE(p.long_prefill("tp2", t0 + 3s));
  // The same prompt is not long under a bound past its prefill, nor on an
  // instance without seeds.
  EXPECT_FALSE(p.started("xtx1", {130000, 256}, t0, 1h));
  EXPECT_FALSE(p.started("unknown", {130000, 256}, t0, 1s));
}

}  // namespace
}  // namespace switchyard::profiles

namespace switchyard::profiles {
namespace {

// Streamed answers teach the policy each card's real rates: a card decoding
// at half its seed is planned at about that after a dozen answers, and a
// prefill is rated in depth-0 tokens, as the seed is.
TEST(ProfilePolicy, MeasuredRatesMoveTheEstimates) {
  SwitchPolicy p(box(), options());
  for (int i = 0; i < 12; ++i)
    p.measured("xtx0", RateSample{.prompt_tokens = 4096,
                                  .cached_tokens = 0,
                                  .first_token_seconds = 2.0,
                                  .output_tokens = 301,
                                  .decode_seconds = 10.0});
  const auto& xtx0 = p.profiles()[0].instances[0].estimate;
  // Each sample weighs a fifth: twelve leave 0.8^12 of the seed's distance.
  const double left = std::pow(0.8, 12);
  EXPECT_NEAR(xtx0.decode_tps, 30.0 + (59.4 - 30.0) * left, 1e-9);
  // 4096 tokens from depth 0 with half speed at 46500: 4096 + 4096²/93000
  // depth-0 tokens in 2 s.
  const double prefill = (4096 + 4096.0 * 4096 / 93000) / 2.0;
  EXPECT_NEAR(xtx0.prefill_tps, prefill + (900 - prefill) * left, 1e-9);
  // The other card and the seeds' other fields are untouched.
  EXPECT_DOUBLE_EQ(p.profiles()[0].instances[1].estimate.decode_tps, 46.1);
  EXPECT_DOUBLE_EQ(xtx0.prefill_half_depth, 46500);
}

TEST(ProfilePolicy, SamplesTooSmallToTimeARateAreIgnored) {
  SwitchPolicy p(box(), options());
  // A cached prompt and an 8-token answer time the engine's fixed costs.
  p.measured("xtx1", RateSample{.prompt_tokens = 8000,
                                .cached_tokens = 7900,
                                .first_token_seconds = 0.05,
                                .output_tokens = 8,
                                .decode_seconds = 0.01});
  p.measured("xtx1", RateSample{.prompt_tokens = 2048, .first_token_seconds = 0});
  const auto& xtx1 = p.profiles()[0].instances[1].estimate;
  EXPECT_DOUBLE_EQ(xtx1.decode_tps, 46.1);
  EXPECT_DOUBLE_EQ(xtx1.prefill_tps, 900);
}

// The decision follows: replicas that turn out three times slower than
// seeded make a queue worth the switch that the seeds said was not.
TEST(ProfilePolicy, AQueueOnCardsSlowerThanSeededSwitches) {
  SwitchPolicy seeded(box(), options());
  SwitchPolicy measured(box(), options());
  for (const char* card : {"xtx0", "xtx1"})
    for (int i = 0; i < 30; ++i)
      measured.measured(card, RateSample{.prompt_tokens = 2048,
                                         .first_token_seconds = 7.0,
                                         .output_tokens = 257,
                                         .decode_seconds = 16.0});
  const Demand d = queued(9, 2048, 256);
  EXPECT_FALSE(seeded.decide("replicas", d, t0));
  EXPECT_FALSE(seeded.decide("replicas", d, t0 + 10s));
  EXPECT_FALSE(measured.decide("replicas", d, t0));
  const auto decision = measured.decide("replicas", d, t0 + 10s);
  ASSERT_TRUE(decision) << measured.last_explanation();
  EXPECT_EQ(decision->target, "tp2");
}

}  // namespace
}  // namespace switchyard::profiles
