// The policies against hand-made candidate lists: the bounded-load rule,
// affinity, session moves, learned rates, caches that never hit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gateway/routing/balance.h"
#include "gateway/routing/least_outstanding.h"
#include "gateway/routing/prefix_affinity.h"
#include "gateway/routing/session_affinity.h"
#include "routing_fixtures.h"

namespace switchyard::gateway {
namespace {

using testing_support::fleet_of;
using testing_support::query;

void load(std::vector<Candidate>& c, std::size_t i, int in_flight) {
  c[i].in_flight = in_flight;
  c[i].free = in_flight < c[i].slots;
}

std::string prompt(char topic, std::size_t blocks) {
  return std::string(blocks * kBlockBytes, topic);
}

TEST(RoutingLoadBound, FactorTimesTheMeanRoundedUpPlusOne) {
  auto c = fleet_of(4, 4);
  // Idle: everyone may take the first request.
  for (const auto& x : c) EXPECT_TRUE(LoadBound(c, 1.25).admits(x));
  // Two requests in flight on one: the mean after this one is 0.75 per
  // instance, so the bound is ceil(0.9375) + 1 = 2 and a third is out.
  load(c, 0, 2);
  EXPECT_FALSE(LoadBound(c, 1.25).admits(c[0]));
  EXPECT_TRUE(LoadBound(c, 1.25).admits(c[1]));
  // Eight in flight, spread: ceil(1.25 × 9 / 4) + 1 = 4, so one more fits anywhere.
  for (std::size_t i = 0; i < 4; ++i) load(c, i, 2);
  EXPECT_TRUE(LoadBound(c, 1.25).admits(c[0]));
  // A larger factor tolerates more skew.
  auto d = fleet_of(4, 8);
  load(d, 0, 3);
  EXPECT_FALSE(LoadBound(d, 1.25).admits(d[0]));
  EXPECT_TRUE(LoadBound(d, 4).admits(d[0]));
}

TEST(RoutingLoadBound, AdmitsExactlyWhatTheDefinitionAdmits) {
  // in_flight + 1 <= ceil(factor × (fleet's requests + 1) × share) + 1, over
  // a grid of factors, loads and unequal slots, wherever the ceiling falls.
  for (const double factor : {1.0, 1.25, 1.5, 2.0, 3.0})
    for (int mine = 0; mine <= 12; ++mine)
      for (int others = 0; others <= 24; ++others)
        for (int slots = 1; slots <= 8; ++slots) {
          auto c = fleet_of(3, 8);
          c[0].slots = slots;
          c[0].in_flight = mine;  // free whatever its slots: the bound alone decides
          load(c, 1, others / 2);
          load(c, 2, others - others / 2);
          const double share = static_cast<double>(slots) / (slots + 16);
          const double bound = std::ceil(factor * (mine + others + 1) * share - 1e-9);
          EXPECT_EQ(LoadBound(c, factor).admits(c[0]), mine + 1 <= bound + LoadBound::kSlack)
              << factor << " " << mine << " " << others << " " << slots;
        }
}

TEST(RoutingLoadBound, AtLowLoadAnInstanceTakesASecondRequest) {
  // Eight sessions on four instances of two slots: two share each home.
  // While one of them runs and the rest of the fleet is idle, the other's
  // turn must still go home (without the slack the bound is ceil(0.625) = 1).
  auto c = fleet_of(4);
  load(c, 0, 1);
  EXPECT_TRUE(LoadBound(c, 1.25).admits(c[0]));
  SessionAffinity p(1.25);
  auto idle = fleet_of(4);
  const auto a = p.pick(query(prompt('a', 10), "a"), idle).position;
  load(idle, a, 1);
  // A second session placed on the same home (the others are full).
  auto others_full = idle;
  for (std::size_t i = 0; i < others_full.size(); ++i)
    if (i != a) load(others_full, i, 2);
  const auto b = p.pick(query(prompt('b', 10), "b"), others_full).position;
  ASSERT_EQ(b, a);
  // b's next turn while a runs and every other instance is idle: home.
  const auto again = p.pick(query(prompt('b', 12), "b"), idle);
  EXPECT_EQ(again.position, a);
  EXPECT_EQ(again.reason, RouteReason::hit);
}

TEST(RoutingPrefixAffinity, TheLongestMatchWins) {
  PrefixAffinity p(1.25);
  auto c = fleet_of(4);
  const std::string a = prompt('a', 40), b = prompt('b', 40);
  const auto first = p.pick(query(a), c);
  EXPECT_EQ(first.reason, RouteReason::cold);
  const auto other = p.pick(query(b), c);
  EXPECT_NE(other.position, first.position);  // cold goes by load (rotation when idle)
  const auto again = p.pick(query(a + prompt('c', 4)), c);
  EXPECT_EQ(again.position, first.position);
  EXPECT_EQ(again.reason, RouteReason::hit);
  EXPECT_NEAR(again.match, 40.0 / 44.0, 1e-9);
}

// A session's home takes its request at once only where no other instance
// holds as much of the prompt: an equal match elsewhere may be freer, and a
// longer one saves more prefill.
TEST(RoutingPrefixAffinity, ASessionsHomeYieldsToAnInstanceHoldingAsMuchOrMore) {
  PrefixAffinity p(4.0);  // a loose bound: load alone turns no request away
  auto c = fleet_of(2, 4);
  const std::string a = prompt('a', 40), b = prompt('b', 8);
  const auto home = p.pick(query(a, "s"), c).position;
  // Another session sends the same prompt while the home is full: the
  // other instance holds as much of `a` now.
  load(c, home, 4);
  const auto other = p.pick(query(a, "t"), c).position;
  ASSERT_NE(other, home);
  // The home runs one request, the other none: among equal matches the
  // freer one takes s's next turn.
  load(c, home, 1);
  EXPECT_EQ(p.pick(query(a + b, "s"), c).position, other);

  // A third session starts on `home`'s side (u's home is `home`), and a
  // fourth sends it further on `other` while `home` is full: `other` holds
  // more of u's next prompt than u's home does.
  PrefixAffinity q(4.0);
  auto d = fleet_of(2, 4);
  const auto u_home = q.pick(query(a, "u"), d).position;
  load(d, u_home, 4);
  const auto further = q.pick(query(a + b, "v"), d).position;
  ASSERT_NE(further, u_home);
  load(d, u_home, 0);
  const auto next = q.pick(query(a + b + prompt('c', 4), "u"), d);
  EXPECT_EQ(next.position, further);
  EXPECT_EQ(next.reason, RouteReason::hit);
  EXPECT_NEAR(next.match, 48.0 / 52.0, 1e-9);
}

TEST(RoutingPrefixAffinity, AHotPrefixSpillsOnceItsInstanceReachesTheBound) {
  PrefixAffinity p(1.25);
  auto c = fleet_of(4, 8);
  const std::string hot = prompt('h', 40);
  const auto home = p.pick(query(hot), c).position;
  // The home is as loaded as the bound allows: with 4 in flight there and
  // 3 elsewhere, ceil(1.25 × 8 × 8/32) + 1 = 4, and a fifth would exceed it.
  load(c, home, 4);
  load(c, (home + 1) % 4, 3);
  const auto spilled = p.pick(query(hot + "x"), c);
  EXPECT_NE(spilled.position, home);
  EXPECT_EQ(spilled.reason, RouteReason::bounded_out);
  EXPECT_EQ(spilled.match, 0.0);
  // The spill went to the least loaded (neither the home nor the one with 3).
  EXPECT_NE(spilled.position, (home + 1) % 4);
  // Now two instances hold the prefix: the next request takes the one under
  // the bound, and it counts as a hit (the best match that may take it).
  const auto next = p.pick(query(hot + "y"), c);
  EXPECT_EQ(next.position, spilled.position);
  EXPECT_EQ(next.reason, RouteReason::hit);
  // The load falls: the first home takes it again.
  load(c, home, 0);
  load(c, (home + 1) % 4, 0);
  EXPECT_EQ(p.pick(query(hot + "z"), c).position, home);
}

TEST(RoutingPrefixAffinity, AHotPrefixUnderSustainedLoadStillSpreads) {
  // Sixteen requests of one prefix pile up (none ends) on four instances of
  // eight slots: the home alone could hold eight of them.
  PrefixAffinity p(1.25);
  auto c = fleet_of(4, 8);
  const std::string hot = prompt('h', 40);
  for (int i = 0; i < 16; ++i) {
    const auto pos = p.pick(query(hot + std::to_string(i)), c).position;
    load(c, pos, c[pos].in_flight + 1);
  }
  int most = 0, used = 0;
  for (const auto& x : c) {
    most = std::max(most, x.in_flight);
    used += x.in_flight > 0;
  }
  // ceil(1.25 × 16 / 4) + 1 = 6 at most on one.
  EXPECT_LE(most, 6);
  EXPECT_GE(used, 3);
}

TEST(RoutingPrefixAffinity, OverTheBoundTheHomeSpillsToTheLeastLoaded) {
  PrefixAffinity p(1.0);
  auto c = fleet_of(2, 8);
  const std::string a = prompt('a', 20);
  const auto home = p.pick(query(a), c).position;
  load(c, home, 6);
  load(c, 1 - home, 2);
  // Bound ceil(1.0 × 9 × 8/16) + 1 = 6: the home (7) may not take it, the
  // other (3) may.
  const auto d = p.pick(query(a), c);
  EXPECT_EQ(d.position, 1 - home);
  EXPECT_EQ(d.reason, RouteReason::bounded_out);
}

TEST(RoutingPrefixAffinity, ARestartFlushesTheInstancesIndex) {
  PrefixAffinity p(1.25);
  auto c = fleet_of(2);
  const std::string a = prompt('a', 20);
  const auto home = p.pick(query(a), c).position;
  EXPECT_EQ(p.pick(query(a), c).reason, RouteReason::hit);
  ++c[home].generation;
  const auto after = p.pick(query(a), c);
  EXPECT_EQ(after.reason, RouteReason::cold);
  EXPECT_EQ(after.match, 0.0);
}

TEST(RoutingPrefixAffinity, TheIndexIsBoundedByTheInstancesKvCache) {
  PrefixAffinity p(4);
  auto c = fleet_of(1);
  c[0].kv_tokens = 30 * kBlockTokens;  // 30 blocks
  const std::string a = prompt('a', 20), b = prompt('b', 20);
  p.pick(query(a), c);
  p.pick(query(b), c);  // 40 blocks sent: a's tail is forgotten
  const auto d = p.pick(query(a), c);
  EXPECT_NEAR(d.match, 10.0 / 20.0, 1e-9);
}

TEST(RoutingPrefixAffinity, AffinityStopsForAnInstanceWhoseCacheNeverHits) {
  PrefixAffinity p(1.25);
  auto c = fleet_of(2);
  const std::string a = prompt('a', 20);
  const auto home = p.pick(query(a), c).position;
  RouteDecision d;
  for (int i = 0; i < AffinityState::kNeverHitAfter; ++i) {
    d = p.pick(query(a), c);
    ASSERT_EQ(d.position, home);
    EXPECT_EQ(d.reason, RouteReason::hit);
    p.finished(c[home], RouteFeedback{400, 0, 10, 1.0, d.match});
  }
  const auto after = p.pick(query(a), c);
  EXPECT_EQ(after.reason, RouteReason::cold);
  EXPECT_EQ(after.match, 0.0);
  // An instance that reported one hit keeps its affinity.
  PrefixAffinity q(1.25);
  const auto h = q.pick(query(a), c).position;
  q.finished(c[h], RouteFeedback{400, 320, 10, 1.0, 1.0});
  for (int i = 0; i < 2 * AffinityState::kNeverHitAfter; ++i) {
    d = q.pick(query(a), c);
    q.finished(c[h], RouteFeedback{400, 0, 10, 1.0, d.match});
  }
  EXPECT_EQ(q.pick(query(a), c).reason, RouteReason::hit);
}

// With every instance's state brought up to date (match() over all of
// them), an instance holds the prompt's longest match alone exactly when
// holds_longest() says so: through records, evictions, restarts, KV sizes
// learned later and instances whose cache never hits.
TEST(RoutingAffinityState, HoldsLongestIsTheUniqueLongestMatch) {
  AffinityState state;
  auto c = fleet_of(5);
  const std::string shared = prompt('s', 3);
  std::vector<std::string> prompts;
  for (char topic = 'a'; topic < 'h'; ++topic)
    for (std::size_t turns = 1; turns <= 3; ++turns)
      prompts.push_back(shared + std::string(turns * 2 * kBlockBytes, topic));
  std::vector<std::size_t> matched;
  std::uint64_t x = 777;
  int alone = 0;
  for (int step = 0; step < 2000; ++step) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    Candidate& at = c[(x >> 33) % c.size()];
    const std::string& text = prompts[(x >> 40) % prompts.size()];
    if (step % 97 == 96) {
      ++at.generation;  // a restart: its index is flushed when next seen
    } else if (step % 89 == 88) {
      at.kv_tokens = static_cast<long>(1 + (x >> 50) % 24) * kBlockTokens;
    } else if (step % 211 == 210) {
      for (int i = 0; i < AffinityState::kNeverHitAfter; ++i)
        state.finished(at, RouteFeedback{400, 0, 10, 1.0, 1.0});
    } else {
      const auto blocks = state.blocks(query(text));
      state.match(c, blocks, matched);
      state.record(at.index, blocks);
    }
    const auto blocks = state.blocks(query(prompts[(x >> 20) % prompts.size()]));
    state.match(c, blocks, matched);
    for (std::size_t i = 0; i < c.size(); ++i) {
      bool unique = matched[i] > 0;
      for (std::size_t j = 0; j < c.size(); ++j) unique &= j == i || matched[j] < matched[i];
      ASSERT_EQ(state.holds_longest(blocks, matched[i]), unique) << "step " << step << " at " << i;
      alone += unique;
    }
  }
  EXPECT_GT(alone, 500);  // the case is common, not a corner
}

TEST(RoutingSession, StaysHomeAndMovesOnceWhenTheHomeDies) {
  SessionAffinity p(1.25);
  auto c = fleet_of(4);
  const std::string turn = prompt('t', 10);
  const auto first = p.pick(query(turn, "s1"), c);
  EXPECT_EQ(first.reason, RouteReason::cold);
  const std::size_t home = c[first.position].index;
  for (int i = 0; i < 3; ++i) {
    const auto d = p.pick(query(turn, "s1"), c);
    EXPECT_EQ(c[d.position].index, home);
    EXPECT_EQ(d.reason, RouteReason::hit);
  }
  // The home dies: the router no longer offers it.
  auto without = c;
  without.erase(without.begin() + static_cast<long>(first.position));
  const auto moved = p.pick(query(turn, "s1"), without);
  EXPECT_EQ(moved.reason, RouteReason::session_moved);
  const std::size_t new_home = without[moved.position].index;
  EXPECT_NE(new_home, home);
  EXPECT_EQ(p.home("s1"), new_home);
  // It sticks to its new home, also once the old one is back.
  for (const auto* fleet : {&without, &c}) {
    const auto d = p.pick(query(turn, "s1"), *fleet);
    EXPECT_EQ((*fleet)[d.position].index, new_home);
    EXPECT_EQ(d.reason, RouteReason::hit);
  }
}

TEST(RoutingSession, OverTheBoundARequestSpillsAndTheHomeStays) {
  SessionAffinity p(1.25);
  auto c = fleet_of(4, 4);
  const std::string turn = prompt('s', 20);
  const auto home = p.pick(query(turn, "s"), c).position;
  load(c, home, 2);  // ceil(1.25 × 3 × 4/16) + 1 = 2: no third one there
  const auto d = p.pick(query(turn, "s"), c);
  EXPECT_NE(d.position, home);
  EXPECT_EQ(d.reason, RouteReason::bounded_out);
  EXPECT_EQ(p.home("s"), c[home].index);
  load(c, home, 0);
  EXPECT_EQ(p.pick(query(turn, "s"), c).position, home);
}

TEST(RoutingSession, SessionsSpreadAndWithoutOneItIsLeastLoad) {
  SessionAffinity p(1.25);
  auto c = fleet_of(4);
  std::vector<std::size_t> homes;
  for (const char* s : {"a", "b", "c", "d"}) {
    const auto d = p.pick(query("", s), c);
    homes.push_back(d.position);
    load(c, d.position, c[d.position].in_flight + 1);
  }
  std::sort(homes.begin(), homes.end());
  EXPECT_EQ(homes, (std::vector<std::size_t>{0, 1, 2, 3}));
  EXPECT_EQ(p.pick(query(""), c).reason, RouteReason::cold);
  EXPECT_FALSE(p.home(""));
}

TEST(RoutingLeastOutstanding, PrefersTheFasterOfTwoIdleCards) {
  LeastOutstanding p;
  auto c = fleet_of(2, 1);
  // Instance 0 delivered 46 tok/s, instance 1 59 tok/s.
  p.finished(c[0], RouteFeedback{100, 0, 460, 10.0, -1});
  p.finished(c[1], RouteFeedback{100, 0, 590, 10.0, -1});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(p.pick(query(""), c).position, 1u);
  // Busy, the fast one is not free: the slow one serves.
  load(c, 1, 1);
  EXPECT_EQ(p.pick(query(""), c).position, 0u);
}

TEST(RoutingLeastOutstanding, RatesWithinAPartInAThousandTakeTurns) {
  LeastOutstanding p;
  auto c = fleet_of(3, 1);
  // Measured rates jitter: 50.00, 50.02 and 49.98 tok/s are the same card
  // three times, so the idle ones take turns rather than the fastest
  // taking all.
  p.finished(c[0], RouteFeedback{100, 0, 5000, 100.0, -1});
  p.finished(c[1], RouteFeedback{100, 0, 5002, 100.0, -1});
  p.finished(c[2], RouteFeedback{100, 0, 4998, 100.0, -1});
  std::vector<std::size_t> picked;
  for (int i = 0; i < 6; ++i) picked.push_back(p.pick(query(""), c).position);
  EXPECT_EQ(picked, (std::vector<std::size_t>{0, 1, 2, 0, 1, 2}));
  // Half a per cent faster is faster: it takes every request while idle.
  p.finished(c[2], RouteFeedback{100, 0, 5100, 100.0, -1});  // the EWMA to 50.29
  for (int i = 0; i < 3; ++i) EXPECT_EQ(p.pick(query(""), c).position, 2u);
}

TEST(RoutingLeastOutstanding, FewerPerSlotBeatsAFasterCardThatIsBusier) {
  LeastOutstanding p;
  auto c = fleet_of(2, 4);
  p.finished(c[0], RouteFeedback{100, 0, 460, 10.0, -1});
  p.finished(c[1], RouteFeedback{100, 0, 590, 10.0, -1});
  load(c, 1, 2);  // 3/59 > 1/46: instance 0 finishes a new request first
  EXPECT_EQ(p.pick(query(""), c).position, 0u);
}

TEST(RoutingLeastOutstanding, ACardNotYetMeasuredCountsAsTheMeanOfTheMeasured) {
  LeastOutstanding p;
  auto c = fleet_of(3, 2);
  // Instance 0 delivered 10 tok/s, instance 1 40 tok/s; 2 is unmeasured.
  p.finished(c[0], RouteFeedback{100, 0, 100, 10.0, -1});
  p.finished(c[1], RouteFeedback{100, 0, 400, 10.0, -1});
  // Requests per slot over rate: 1 busy at 2/(2 × 40) loses to 2 at the
  // mean, 1/(2 × 25) (0 at 1/(2 × 10)).
  load(c, 1, 1);
  EXPECT_EQ(p.pick(query(""), c).position, 2u);
  // 2 busy too: 2/(2 × 25) is more than 2/(2 × 40).
  load(c, 2, 1);
  EXPECT_EQ(p.pick(query(""), c).position, 1u);
}

TEST(RoutingLeastOutstanding, AShortWarmUpPromptDoesNotMakeTheSlowerCardLookFaster) {
  // As a bench's one-at-a-time run reported them (wall seconds at speed
  // factor 10): the blower card (1) first served an 8-token warm-up prompt,
  // then 2048-token prompts; the fast card (0) had one slow answer.
  LeastOutstanding p;
  auto c = fleet_of(2);
  const auto answer = [](long prompt, double seconds, double decode) {
    RouteFeedback f{prompt, 0, 256, seconds, -1};
    f.decode_seconds = decode;
    return f;
  };
  p.finished(c[1], answer(8, 0.320, 0.316));
  p.finished(c[0], answer(2048, 0.434, 0.175));
  p.finished(c[1], answer(2048, 0.560, 0.248));
  p.finished(c[1], answer(2048, 0.559, 0.249));
  p.finished(c[1], answer(2048, 0.577, 0.264));
  p.finished(c[0], answer(2048, 0.520, 0.188));
  // Over the whole request the warm-up's rate (800 wall tok/s) would still
  // hold the blower card above the fast one (571 against 560).
  for (int i = 0; i < 4; ++i) EXPECT_EQ(p.pick(query(""), c).position, 0u);
}

}  // namespace
}  // namespace switchyard::gateway
