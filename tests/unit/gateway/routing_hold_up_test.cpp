// A long prefill holds up what an instance runs (PrefillCost::holds_up): an
// engine's step carries the running requests' next tokens with the next
// chunk of the prompt. In bench/routing.sh's skewed run, with the heavy
// sessions arriving a quarter second after the light ones, a 32K-token
// first turn placed beside a light turn that was answering made that turn
// take 5.3 s instead of 0.6 s, and the instance's engine time came out at
// 1.3-1.5x the mean. The affinity policies now wait for such an instance
// to finish what it runs, and keep it meanwhile (Homes::reserve).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "gateway/router.h"
#include "gateway/routing/balance.h"
#include "gateway/routing/home_wait.h"
#include "gateway/routing/homes.h"
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

TEST(RoutingHoldUp, ALongPromptHoldsUpTheShorterRequestsAnInstanceRuns) {
  auto c = fleet_of(4);
  c[0].in_flight = 1;
  c[0].shortest_running = 2000;  // a light turn answering: nothing left to prefill
  c[1].in_flight = 1;
  c[1].shortest_running = 32000;  // a heavy one
  c[2].in_flight = 2;
  c[2].shortest_running = 2000;
  c[2].free = false;
  const std::vector<std::size_t> none(4, 0);
  const PrefillCost heavy(c, 1.25, 32000, none);
  EXPECT_TRUE(heavy.holds_up(c[0]));
  EXPECT_FALSE(heavy.usable(c[0]));
  EXPECT_FALSE(heavy.holds_up(c[1]));  // as long as what runs there
  EXPECT_TRUE(heavy.usable(c[1]));
  EXPECT_TRUE(heavy.holds_up(c[2]));   // busy or not
  EXPECT_FALSE(heavy.holds_up(c[3]));  // idle
  EXPECT_EQ(heavy.uncached(c[0]), 32000);
  // Up to kHoldUp chunks of prompt delay the others by a few steps only.
  const PrefillCost medium(c, 1.25, PrefillCost::kHoldUp * PrefillCost::kHoldUpFloor, none);
  EXPECT_FALSE(medium.holds_up(c[0]));
  // What the instance holds of the prompt is not evaluated again.
  const std::vector<std::size_t> held{1900, 0, 0, 0};  // 30,400 tokens cached on c[0]
  const PrefillCost cached(c, 1.25, 32000, held);
  EXPECT_FALSE(cached.holds_up(c[0]));
}

TEST(RoutingHoldUp, WithNothingUsableARequestGoesWhereItStartsSoonest) {
  auto c = fleet_of(3);
  c[0].in_flight = 1;
  c[0].prefilling = 32000;  // a free slot behind a long prefill
  c[1].in_flight = 1;
  c[1].prefilling = 3000;
  c[2].in_flight = 2;
  c[2].free = false;
  const std::vector<std::size_t> none(3, 0);
  const PrefillCost light(c, 1.25, 500, none);
  EXPECT_FALSE(light.usable(c[1]));  // 3,000 tokens late: more than its own length
  EXPECT_EQ(light.soonest_start(), 1u);
}

// Two instances of two slots, each answering a light turn: a 32K-token new
// session has nowhere to go without holding one up.
template <class Policy>
void a_heavy_session_waits_for_its_home_to_finish_what_it_runs() {
  MeasuredFleet<Policy> f(2);
  auto& [clock, p, c] = f;
  const std::string a = prompt_of('a', 2000), b = prompt_of('b', 2000);
  const std::size_t at_a = p.pick(query(a, "a"), c).position;
  c[at_a].in_flight = 1;
  c[at_a].shortest_running = 2000;
  const std::size_t at_b = p.pick(query(b, "b"), c).position;
  ASSERT_NE(at_a, at_b);
  c[at_b].in_flight = 1;
  c[at_b].shortest_running = 2000;

  const std::string heavy = prompt_of('h', 32000);
  const auto d = p.pick(query(heavy, "heavy"), c);
  ASSERT_TRUE(d.wait_until) << p.name() << ": went to " << d.position;
  // At most as long as it would have held the light turn up: its prefill
  // (32,000 tokens at 1,000 a second), past home_wait's 5 s.
  EXPECT_NEAR(std::chrono::duration<double>(*d.wait_until - *clock.now).count(), 32.0, 0.5);

  // Its home is kept for it: a new light session goes to the other
  // instance, although both have a free slot.
  const std::string l = prompt_of('l', 2000);
  const auto light = p.pick(query(l, "light"), c);
  EXPECT_FALSE(light.wait_until);
  const std::size_t home = 1 - light.position;
  c[light.position].in_flight = 2;
  c[light.position].free = false;

  // Its home finishes the light turn: it goes there.
  clock.advance(600ms);
  c[home].in_flight = 0;
  c[home].shortest_running = 0;
  const auto went = p.pick(query(heavy, "heavy"), c);
  EXPECT_FALSE(went.wait_until) << p.name();
  EXPECT_EQ(went.position, home) << p.name();
  // Routed, it keeps nothing: the home takes other requests (the free slot
  // behind its prefill is for heavy ones).
  c[home].in_flight = 1;
  c[home].shortest_running = 32000;
  const std::string other = prompt_of('o', 32000);
  const auto beside = p.pick(query(other, "other"), c);
  EXPECT_FALSE(beside.wait_until) << p.name();
  EXPECT_EQ(beside.position, home) << p.name();
}

TEST(RoutingHoldUp, AHeavySessionWaitsForItsHomeToFinishWhatItRuns) {
  a_heavy_session_waits_for_its_home_to_finish_what_it_runs<SessionAffinity>();
  a_heavy_session_waits_for_its_home_to_finish_what_it_runs<PrefixAffinity>();
}

template <class Policy>
void a_reservation_ends_when_its_request_leaves() {
  MeasuredFleet<Policy> f(1);
  auto& [clock, p, c] = f;
  const std::string a = prompt_of('a', 2000), heavy = prompt_of('h', 32000);
  ASSERT_FALSE(p.pick(query(a, "a"), c).wait_until);
  c[0].in_flight = 1;
  c[0].shortest_running = 2000;
  ASSERT_TRUE(p.pick(query(heavy, "heavy"), c).wait_until);
  const std::string l = prompt_of('l', 2000);
  EXPECT_TRUE(p.pick(query(l, "light"), c).wait_until) << p.name();  // kept for "heavy"
  clock.advance(20s);
  p.left(query(heavy, "heavy"));  // its client went away
  const auto d = p.pick(query(l, "light"), c);
  EXPECT_FALSE(d.wait_until) << p.name();
  EXPECT_EQ(d.position, 0u);
  // The session comes back: its request waits afresh (32 s, as long as it
  // would hold the light turn up), not what was left of the ended wait.
  const auto again = p.pick(query(heavy, "heavy"), c);
  ASSERT_TRUE(again.wait_until) << p.name();
  EXPECT_NEAR(std::chrono::duration<double>(*again.wait_until - *clock.now).count(), 32.0, 0.5)
      << p.name();
}

TEST(RoutingHoldUp, AReservationEndsWhenItsRequestLeaves) {
  a_reservation_ends_when_its_request_leaves<SessionAffinity>();
  a_reservation_ends_when_its_request_leaves<PrefixAffinity>();
}

TEST(RoutingHoldUp, AReservationWeighsOnItsInstanceAndEnds) {
  FakeClock clock;
  Homes homes(clock.fn());
  const auto c = fleet_of(2);
  homes.set("light", 0, 2000 * 4);
  EXPECT_EQ(homes.lightest(c, "new"), 1u);
  homes.reserve("heavy", 1, 32000, *clock.now + 1s);
  EXPECT_TRUE(homes.reserved_for_other(1, "new"));
  EXPECT_FALSE(homes.reserved_for_other(1, "heavy"));
  EXPECT_EQ(homes.lightest(c, "new"), 0u);          // 2,000 tokens against 32,000
  EXPECT_EQ(homes.lightest(c, "heavy"), 1u);        // its own, while it lasts
  homes.reserve("other", 1, 100, *clock.now + 1s);  // kept for "heavy" already
  EXPECT_TRUE(homes.reserved_for_other(1, "other"));
  clock.advance(1s);
  EXPECT_FALSE(homes.reserved_for_other(1, "new"));
  EXPECT_EQ(homes.lightest(c, "new"), 1u);
  homes.reserve("heavy", 1, 32000, *clock.now + 1s);
  homes.set("heavy", 1, 32000 * 4);  // routed: a home now, no longer a reservation
  EXPECT_FALSE(homes.reserved_for_other(1, "new"));
}

// The router and the queue: the heavy request waits while a light one
// arriving after it takes the other instance, and gets its home as soon as
// the light turn there ends.
TEST(RoutingHoldUp, TheQueueHandsTheHeavyRequestItsHomeOnceItEmpties) {
  QueuedSessionFleet f;
  auto& [clock, table, router, io, queue] = f;

  const std::string a = prompt_of('a', 2000), b = prompt_of('b', 2000),
                    heavy = prompt_of('h', 32000), c = prompt_of('c', 2000);
  auto light_a = router.acquire(query(a, "a"));
  auto light_b = router.acquire(query(b, "b"));
  ASSERT_TRUE(light_a && light_b);
  ASSERT_NE(light_a->instance(), light_b->instance());
  light_a->answering();
  light_b->answering();

  std::vector<std::size_t> heavy_at, light_at;
  std::vector<RouteLease> held;
  submit(io, queue, query(heavy, "heavy"), QueueShare{0, 1, 100}, 60s, [&](RouteLease lease) {
    heavy_at.push_back(lease.instance());
    held.push_back(std::move(lease));
  });
  EXPECT_TRUE(heavy_at.empty());
  submit(io, queue, query(c, "c"), QueueShare{0, 1, 100}, 60s, [&](RouteLease lease) {
    light_at.push_back(lease.instance());
    held.push_back(std::move(lease));
  });
  ASSERT_EQ(light_at.size(), 1u);  // past the waiting heavy request, not to its home
  const std::size_t home = 1 - light_at[0];
  EXPECT_TRUE(heavy_at.empty());
  (light_a->instance() == home ? light_a : light_b)->release();
  run_ready(io);
  ASSERT_EQ(heavy_at.size(), 1u);
  EXPECT_EQ(heavy_at[0], home);
  EXPECT_EQ(queue.depth("m"), 0);
}

}  // namespace
}  // namespace switchyard::gateway
