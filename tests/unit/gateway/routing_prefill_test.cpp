// What an instance is still prefilling counts in where the affinity
// policies send a request (PrefillCost): a free slot beside a 32K-token
// prefill starts a light turn seconds late. Measured in bench/routing.sh's
// skewed run, where light sessions took those slots and their instances'
// engine time came out 1.3–1.5× the mean.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "gateway/router.h"
#include "gateway/routing/balance.h"
#include "gateway/routing/home_wait.h"
#include "gateway/routing/prefix_affinity.h"
#include "gateway/routing/session_affinity.h"
#include "gateway/wait_queue.h"
#include "instance_table.h"
#include "queue_driver.h"
#include "routing_fixtures.h"

namespace switchyard::gateway {
namespace {

using namespace testing_support;  // fleets, queries, the fake clock
using namespace std::chrono_literals;

TEST(RoutingPrefill, AnInstanceFarBehindTheSoonestIsPassedOver) {
  auto c = fleet_of(3);
  c[0].in_flight = 1;
  c[0].prefilling = 32000;  // free slot, busy compute
  c[0].shortest_running = 32000;
  c[1].in_flight = 2;
  c[1].free = false;  // both slots answering: soon free
  const std::vector<std::size_t> none(3, 0);
  const PrefillCost light(c, 1.25, 2000, none);
  EXPECT_FALSE(light.usable(c[0]));
  EXPECT_FALSE(light.usable(c[1]));  // busy
  EXPECT_TRUE(light.usable(c[2]));
  // Beside a home that would start it after 2,000 tokens: no later than 4,000.
  EXPECT_EQ(light.latest_beside(c[1]), 4000);
  EXPECT_EQ(light.latest_beside(c[0]), 36000);
  EXPECT_TRUE(light.usable_by(c[2], light.latest_beside(c[1])));
  EXPECT_FALSE(light.usable_by(c[2], 1999)) << "it evaluates the 2,000 tokens first";
  EXPECT_FALSE(light.usable_by(c[0], light.latest_beside(c[0]))) << "not usable at all";
  EXPECT_EQ(light.free_delay(), 0);  // c[2] is idle
  // A prompt as long as the one ahead of it starts about as soon there.
  const PrefillCost heavy(c, 1.25, 32000, none);
  EXPECT_TRUE(heavy.usable(c[0]));
  // What an instance holds of the prompt is not evaluated again.
  c[2].in_flight = 2;
  c[2].free = false;
  const std::vector<std::size_t> held{0, 100, 0};  // 1600 tokens on c[1]
  const PrefillCost cached(c, 1.25, 2000, held);
  EXPECT_EQ(cached.free_delay(), 32000 + 2000 - 400);
}

// A session's home is taken without matching the prompt against the other
// instances when surely_usable() says so: it must never say so of a home
// that usable(), which weighs them all, would pass over.
TEST(RoutingPrefill, SurelyUsableOnlyWhereUsable) {
  std::mt19937 random(32);
  const auto draw = [&random](long most) {
    return std::uniform_int_distribution<long>(0, most)(random);
  };
  int surely = 0, usable_only = 0;
  for (int trial = 0; trial < 4000; ++trial) {
    auto c = fleet_of(static_cast<int>(1 + draw(7)), static_cast<int>(1 + draw(3)));
    std::vector<std::size_t> held;
    for (auto& one : c) {
      one.in_flight = static_cast<int>(draw(one.slots));
      one.free = one.in_flight < one.slots;
      one.prefilling = draw(1) ? draw(40000) : 0;
      one.shortest_running = one.in_flight > 0 ? draw(40000) : 0;
      held.push_back(static_cast<std::size_t>(draw(3) ? 0 : draw(2500 / kBlockTokens)));
    }
    const long tokens = draw(3) ? draw(4000) : draw(40000);
    const PrefillCost cost(c, 1.25, tokens, held);
    for (std::size_t i = 0; i < c.size(); ++i) {
      const bool sure = PrefillCost::surely_usable(c, c[i], 1.25, tokens, held[i]);
      ASSERT_TRUE(!sure || cost.usable(c[i])) << "trial " << trial << ", candidate " << i;
      surely += sure;
      usable_only += !sure && cost.usable(c[i]);
    }
  }
  // Both answers come up: the test is not vacuous, and the rest is left to
  // the full pick.
  EXPECT_GT(surely, 1000);
  EXPECT_GT(usable_only, 10);
}

TEST(RoutingPrefill, SurelyUsableLeavesACloseCallToTheFullPick) {
  auto c = fleet_of(3);
  c[0].prefilling = 3000;  // the home: 3,000 + its 2,000 uncached tokens
  c[0].in_flight = 1;
  c[0].shortest_running = 3000;
  for (std::size_t i = 1; i < 3; ++i) {
    c[i].prefilling = 1500;  // each would start it after 1,500 + 2,000
    c[i].in_flight = 1;
    c[i].shortest_running = 1500;
  }
  const std::vector<std::size_t> none(3, 0);
  // 5,000 is within 2,000 of the soonest start (3,500): usable, but only
  // what the others hold tells, so the fast test says no.
  EXPECT_TRUE(PrefillCost(c, 1.25, 2000, none).usable(c[0]));
  EXPECT_FALSE(PrefillCost::surely_usable(c, c[0], 1.25, 2000, 0));
  // With nothing prefilling anywhere, the home is surely usable.
  for (auto& one : c) one.prefilling = 0;
  EXPECT_TRUE(PrefillCost::surely_usable(c, c[0], 1.25, 2000, 0));
}

// Two instances of two slots: a heavy session prefilling on one, light
// sessions on the other.
template <class Policy>
struct Fleet : MeasuredFleet<Policy> {
  std::size_t heavy_at = 0, light_at = 0;
  std::vector<std::string> prompts;

  explicit Fleet(const std::string& common = {}) : MeasuredFleet<Policy>(2) {
    auto& [clock, p, c] = static_cast<MeasuredFleet<Policy>&>(*this);
    prompts.push_back(prompt_of('h', 32000, common));
    heavy_at = p.pick(query(prompts.back(), "heavy"), c).position;
    c[heavy_at].in_flight = 1;
    c[heavy_at].prefilling = 32000;
    prompts.push_back(prompt_of('a', 2000, common));
    light_at = p.pick(query(prompts.back(), "light-a"), c).position;
  }
};

template <class Policy>
void a_new_light_session_waits_instead_of_sitting_beside_a_long_prefill(std::string common) {
  Fleet<Policy> f(common);
  auto& c = f.c;
  ASSERT_NE(f.light_at, f.heavy_at);
  c[f.light_at].in_flight = 2;  // two light turns answering there
  c[f.light_at].free = false;
  const std::string light = prompt_of('b', 2000, common);
  const auto d = f.p.pick(query(light, "light-b"), c);
  // The free slot would start it about 32 s late (32,000 tokens ahead at
  // 1,000 a second): it waits as long, past home_wait's 5 s.
  ASSERT_TRUE(d.wait_until) << "went to " << d.position;
  EXPECT_NEAR(std::chrono::duration<double>(*d.wait_until - *f.clock.now).count(),
              (32000.0 + 2000 - 2000) / 1000, 0.5);
  // A light slot frees: it goes there.
  *f.clock.now += 6s;
  c[f.light_at].in_flight = 1;
  c[f.light_at].free = true;
  const auto went = f.p.pick(query(light, "light-b"), c);
  EXPECT_FALSE(went.wait_until);
  EXPECT_EQ(went.position, f.light_at);
  // Once the heavy prompt is evaluated, its instance's free slot is as good.
  c[f.heavy_at].prefilling = 0;
  c[f.light_at].in_flight = 2;
  c[f.light_at].free = false;
  const std::string other = prompt_of('c', 2000, common);
  const auto spilled = f.p.pick(query(other, "light-c"), c);
  EXPECT_FALSE(spilled.wait_until);
  EXPECT_EQ(spilled.position, f.heavy_at);
}

TEST(RoutingPrefill, ANewLightSessionWaitsInsteadOfSittingBesideALongPrefill) {
  a_new_light_session_waits_instead_of_sitting_beside_a_long_prefill<SessionAffinity>({});
  a_new_light_session_waits_instead_of_sitting_beside_a_long_prefill<PrefixAffinity>({});
  // Sessions that share a system prompt: every instance matches its blocks.
  const std::string system(64 * 4, 's');
  a_new_light_session_waits_instead_of_sitting_beside_a_long_prefill<PrefixAffinity>(system);
}

TEST(RoutingPrefill, ALightTurnLeavesAHomeBehindAnotherSessionsLongPrefill) {
  MeasuredFleet<SessionAffinity> f(2);
  auto& [clock, p, c] = f;
  const std::string turn1 = prompt_of('a', 2000);
  const std::size_t home = p.pick(query(turn1, "light"), c).position;
  const std::string turn2 = turn1 + prompt_of('b', 300);
  // A light prompt being evaluated beside it: it goes home.
  c[home].in_flight = 1;
  c[home].prefilling = 1500;
  EXPECT_EQ(p.pick(query(turn2, "light"), c).position, home);
  // A 32K-token one: the idle instance starts it far sooner, cache or not;
  // the home stays where its context is.
  c[home].prefilling = 32000;
  const auto d = p.pick(query(turn2, "light"), c);
  EXPECT_FALSE(d.wait_until);
  EXPECT_NE(d.position, home);
  EXPECT_EQ(d.reason, RouteReason::bounded_out);
  EXPECT_EQ(p.home("light"), c[home].index);
}

TEST(RoutingPrefill, AMovedSessionThatWaitsFirstCountsItsMoveWhenItGoes) {
  MeasuredFleet<SessionAffinity> f(3);
  auto& [clock, p, c] = f;
  const std::string turn = prompt_of('a', 2000);
  const std::size_t home = p.pick(query(turn, "s"), c).position;
  c.erase(c.begin() + static_cast<std::ptrdiff_t>(home));  // its instance died
  // One survivor answering two light turns, the other prefilling 32K tokens.
  c[0].in_flight = 2;
  c[0].free = false;
  c[1].in_flight = 1;
  c[1].prefilling = 32000;
  ASSERT_TRUE(p.pick(query(turn, "s"), c).wait_until);
  c[0].in_flight = 1;
  c[0].free = true;
  const auto went = p.pick(query(turn, "s"), c);
  EXPECT_EQ(went.position, 0u);
  EXPECT_EQ(went.reason, RouteReason::session_moved);
  EXPECT_EQ(p.home("s"), c[0].index);
}

// The router and the queue: when the prefill ahead of a free slot ends, a
// request waiting because of it takes the slot at once, not at its wait's
// end.
TEST(RoutingPrefill, AWaiterTakesTheSlotBesideAPrefillOnceItsFirstTokenGoesOut) {
  QueuedSessionFleet f;
  auto& [clock, table, router, io, queue] = f;

  const std::string heavy = prompt_of('h', 32000), a = prompt_of('a', 2000),
                    b = prompt_of('b', 2000), c = prompt_of('c', 2000);
  auto prefilling = router.acquire(query(heavy, "heavy"));
  auto light_a = router.acquire(query(a, "a"));
  auto light_b = router.acquire(query(b, "b"));
  ASSERT_TRUE(prefilling && light_a && light_b);
  ASSERT_EQ(light_a->instance(), light_b->instance());  // the light instance, both slots
  ASSERT_NE(light_a->instance(), prefilling->instance());
  light_a->answering();
  light_b->answering();

  std::vector<std::size_t> granted;
  std::vector<RouteLease> held;
  testing_support::submit(io, queue, query(c, "c"), QueueShare{0, 1, 100}, 60s,
                          [&](RouteLease lease) {
                            granted.push_back(lease.instance());
                            held.push_back(std::move(lease));
                          });
  EXPECT_TRUE(granted.empty());  // the free slot is behind 32K tokens of prefill
  EXPECT_EQ(queue.depth("m"), 1);
  prefilling->answering();
  testing_support::run_ready(io);
  ASSERT_EQ(granted.size(), 1u);
  EXPECT_EQ(granted[0], prefilling->instance());
  EXPECT_EQ(queue.depth("m"), 0);
}

TEST(RoutingPrefill, AWaitAsLongAsTheSlowSlotsDelayOutlastsHomeWait) {
  FakeClock clock;
  HomeWait wait(5s, clock.fn());
  const auto start = *clock.now;
  EXPECT_EQ(wait.until("s", true, 30s), start + 30s);
  *clock.now += 10s;
  EXPECT_EQ(wait.until("s", true, 30s), start + 30s);
  EXPECT_EQ(wait.until("t", true, 1s), *clock.now + 5s);  // never shorter than home_wait
  HomeWait never(0s, clock.fn());
  EXPECT_FALSE(never.until("s", true, 30s));
}

}  // namespace
}  // namespace switchyard::gateway
