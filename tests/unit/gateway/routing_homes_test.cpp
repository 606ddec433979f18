// Where new sessions go: spread by the active homes each instance holds,
// not by the noise in measured rates when every instance is idle.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gateway/routing/homes.h"
#include "gateway/routing/prefix_affinity.h"
#include "gateway/routing/session_affinity.h"
#include "routing_fixtures.h"

namespace switchyard::gateway {
namespace {

using testing_support::fleet_of;
using testing_support::query;

// Instance 0 measured a hair faster than the rest, as noise would have it.
template <class Policy>
void rates_with_noise(Policy& p, const std::vector<Candidate>& c) {
  for (const auto& x : c) p.finished(x, RouteFeedback{100, 0, x.index == 0 ? 600 : 590, 10.0, -1});
}

// Sessions arrive one at a time, each answered before the next: every
// instance is idle at every pick.
template <class Policy>
std::vector<int> homes_of_sequential_sessions(Policy& p, int sessions) {
  const auto c = fleet_of(4);
  rates_with_noise(p, c);
  std::vector<int> per(4, 0);
  std::vector<std::string> names, prompts;
  for (int s = 0; s < sessions; ++s) {
    names.push_back("s" + std::to_string(s));
    prompts.push_back(std::string(20 * kBlockBytes, static_cast<char>('a' + s)));
  }
  for (int s = 0; s < sessions; ++s) {
    const auto d = p.pick(query(prompts[s], names[s]), c);
    EXPECT_EQ(d.reason, RouteReason::cold) << s;
    ++per[c[d.position].index];
  }
  return per;
}

TEST(RoutingHomes, SequentialNewSessionsSpreadEvenly) {
  SessionAffinity session(1.25);
  EXPECT_EQ(homes_of_sequential_sessions(session, 8), (std::vector<int>{2, 2, 2, 2}));
  PrefixAffinity prefix(1.25);
  EXPECT_EQ(homes_of_sequential_sessions(prefix, 8), (std::vector<int>{2, 2, 2, 2}));
}

TEST(RoutingHomes, ANewSessionGoesWhereFewestAreHomeEvenIfBusier) {
  SessionAffinity p(1.25);
  auto c = fleet_of(2);
  const auto a = c[p.pick(query("", "a"), c).position].index;
  const auto b = c[p.pick(query("", "b"), c).position].index;
  ASSERT_NE(a, b);
  // A third session: one of the two now holds two homes.
  const auto third = c[p.pick(query("", "c"), c).position].index;
  // The fourth goes to the other one, although it is running a request.
  c[1 - third].in_flight = 1;
  EXPECT_EQ(c[p.pick(query("", "d"), c).position].index, 1 - third);
}

TEST(RoutingHomes, IdleSessionsNoLongerCount) {
  auto now = std::make_shared<Homes::Clock::time_point>();
  Homes homes([now] { return *now; });
  const auto c = fleet_of(2);
  const LoadBound bound(c, 1.25);
  const auto under_bound = [&](const Candidate& x) { return bound.admits(x); };
  Throughput speed;
  Rotation rotation;
  homes.set("old1", 0, 0);
  homes.set("old2", 0, 0);
  *now += Homes::kActiveFor + std::chrono::seconds(1);
  homes.set("new", 1, 0);
  // Only "new" is active: instance 0 holds no active home.
  EXPECT_EQ(c[homes.place(c, under_bound, speed, rotation, 0)].index, 0u);
  homes.set("old1", 0, 0);
  homes.set("old2", 0, 0);  // back: two on 0, one on 1
  EXPECT_EQ(c[homes.place(c, under_bound, speed, rotation, 0)].index, 1u);
  EXPECT_EQ(homes.find("old1"), 0u);
  EXPECT_FALSE(homes.find("never"));
}

// Two heavy sessions and light ones, one at a time on two idle instances.
// Counted by sessions, the second heavy one went where the first was (two
// homes each, a tie broken in rotation); weighed by their prompts, it goes
// to the instance holding only light ones.
template <class Policy>
void heavy_sessions_apart(Policy& p) {
  const auto c = fleet_of(2);
  const std::string heavy(2048 * kBlockBytes, 'h'), heavy2(2048 * kBlockBytes, 'H');
  std::vector<std::string> light;
  for (char t : {'a', 'b', 'c'}) light.emplace_back(128 * kBlockBytes, t);
  const auto where = [&](const std::string& prompt, std::string_view session) {
    return c[p.pick(query(prompt, session), c).position].index;
  };
  const auto h1 = where(heavy, "h1");
  for (int i = 0; i < 3; ++i) EXPECT_NE(where(light[i], "l" + std::to_string(i)), h1) << i;
  EXPECT_NE(where(heavy2, "h2"), h1);
}

TEST(RoutingHomes, AReservationHoldsUntilItEndsExpiresOrIsReplaced) {
  auto now = std::make_shared<Homes::Clock::time_point>();
  Homes homes([now] { return *now; });
  const auto soon = [&] { return *now + std::chrono::seconds(10); };
  EXPECT_FALSE(homes.reserved_for_other(0, "b"));
  homes.reserve("a", 0, 100, soon());
  EXPECT_TRUE(homes.reserved_for_other(0, "b"));
  EXPECT_FALSE(homes.reserved_for_other(0, "a"));
  EXPECT_FALSE(homes.reserved_for_other(1, "b"));
  // Expired: another session may take the instance, and keeps it.
  *now += std::chrono::seconds(11);
  EXPECT_FALSE(homes.reserved_for_other(0, "b"));
  homes.reserve("b", 0, 100, soon());
  EXPECT_TRUE(homes.reserved_for_other(0, "a"));
  // Moving on: its reservation follows it; the old instance is free.
  homes.reserve("b", 1, 100, soon());
  EXPECT_FALSE(homes.reserved_for_other(0, "a"));
  EXPECT_TRUE(homes.reserved_for_other(1, "a"));
  // Routed (set) or gone (unreserve): nothing is kept any more.
  homes.reserve("c", 2, 100, soon());
  homes.set("b", 1, 400);
  homes.unreserve("c");
  for (std::size_t i = 0; i < 3; ++i) EXPECT_FALSE(homes.reserved_for_other(i, "a")) << i;
  homes.reserve("a", 2, 100, soon());
  EXPECT_TRUE(homes.reserved_for_other(2, "b"));
}

TEST(RoutingHomes, TwoHeavySessionsDoNotShareAnInstanceWhileAnotherHasOnlyLightOnes) {
  SessionAffinity session(1.25);
  heavy_sessions_apart(session);
  PrefixAffinity prefix(1.25);
  heavy_sessions_apart(prefix);
}

TEST(RoutingHomes, AHomeWeighsItsLastPrompt) {
  Homes homes;
  homes.set("s", 0, 4000);
  EXPECT_EQ(homes.weight("s"), 1000);  // about 4 bytes a token
  homes.set("s", 0, 8000);
  EXPECT_EQ(homes.weight("s"), 2000);
  homes.set("t", 0, 0);
  EXPECT_EQ(homes.weight("t"), 1);
  EXPECT_EQ(homes.weight("never"), 0);
}

TEST(RoutingHomes, AMovedSessionsNewHomeIsTheLightestEvenIfBusy) {
  SessionAffinity p(1.25);
  auto c = fleet_of(4);
  const std::string big_a(100 * kBlockBytes, 'a'), small_b(kBlockBytes, 'b'),
      big_c(100 * kBlockBytes, 'c'), big_d(100 * kBlockBytes, 'd');
  const auto home = [&](const std::string& prompt, std::string_view s) {
    return c[p.pick(query(prompt, s), c).position].index;
  };
  ASSERT_EQ(home(big_a, "a"), 0u);
  ASSERT_EQ(home(small_b, "b"), 1u);
  ASSERT_EQ(home(big_c, "c"), 2u);
  ASSERT_EQ(home(big_d, "d"), 3u);
  // Instance 0 dies while instance 1, home to the lightest, runs two requests.
  std::vector<Candidate> alive(c.begin() + 1, c.end());
  alive[0].in_flight = 2;
  alive[0].free = false;
  const auto moved = p.pick(query(big_a, "a"), alive);
  EXPECT_EQ(moved.reason, RouteReason::session_moved);
  EXPECT_EQ(p.home("a"), 1u);
  EXPECT_TRUE(alive[moved.position].free);  // this request spills; the home stays
  alive[0].in_flight = 0;
  alive[0].free = true;
  const auto next = p.pick(query(big_a, "a"), alive);
  EXPECT_EQ(alive[next.position].index, 1u);
  EXPECT_EQ(next.reason, RouteReason::hit);
}

TEST(RoutingHomes, APrefixSessionWhoseHomeDiedMovesOnceToTheLightest) {
  PrefixAffinity p(1.25);
  auto c = fleet_of(3);
  const std::string big_a(100 * kBlockBytes, 'a'), small_b(kBlockBytes, 'b'),
      big_c(100 * kBlockBytes, 'c');
  ASSERT_EQ(c[p.pick(query(big_a, "a"), c).position].index, 0u);
  ASSERT_EQ(c[p.pick(query(small_b, "b"), c).position].index, 1u);
  ASSERT_EQ(c[p.pick(query(big_c, "c"), c).position].index, 2u);
  // Instance 0 dies; the next turn matches nowhere else.
  const std::vector<Candidate> alive(c.begin() + 1, c.end());
  const std::string turn2 = big_a + std::string(10 * kBlockBytes, 'x');
  const auto moved = p.pick(query(turn2, "a"), alive);
  EXPECT_EQ(moved.reason, RouteReason::session_moved);
  EXPECT_EQ(alive[moved.position].index, 1u);  // home to the lightest session
  const auto next = p.pick(query(turn2 + std::string(kBlockBytes, 'y'), "a"), alive);
  EXPECT_EQ(next.reason, RouteReason::hit);
  EXPECT_EQ(alive[next.position].index, 1u);
  // A session without a home, or with its home alive, does not move.
  EXPECT_EQ(p.pick(query(std::string(50 * kBlockBytes, 'n'), "new"), alive).reason,
            RouteReason::cold);
  EXPECT_EQ(p.pick(query(big_c + "z", "c"), alive).reason, RouteReason::hit);
}

}  // namespace
}  // namespace switchyard::gateway
