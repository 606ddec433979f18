#include "gateway/router.h"

#include <gtest/gtest.h>

#include <vector>

#include "instance_table.h"

namespace switchyard::gateway {
namespace {

using fleet::InstanceState;
using testing_support::add_instance;

struct RouterTest : testing::Test {
  Router& make(config::RoutingPolicy policy, std::vector<std::pair<std::string, int>> ready) {
    for (auto& [model, slots] : ready) add_instance(table, model, slots);
    router = std::make_unique<Router>(table, make_routing_policy(policy));
    return *router;
  }
  static RouteQuery q(std::string_view model, std::span<const std::size_t> tried = {}) {
    return RouteQuery{model, nullptr, {}, {}, tried, {}};
  }
  InstanceTable table;
  std::unique_ptr<Router> router;
};

TEST_F(RouterTest, NeverExceedsSlotsAndRefusesWhenFull) {
  Router& r = make(config::RoutingPolicy::least_outstanding, {{"m", 1}, {"m", 2}});
  std::vector<RouteLease> leases;
  for (int i = 0; i < 3; ++i) {
    auto l = r.acquire(q("m"));
    ASSERT_TRUE(l) << i;
    leases.push_back(std::move(*l));
  }
  EXPECT_EQ(r.in_flight(0), 1);
  EXPECT_EQ(r.in_flight(1), 2);
  Router::Refusal why{};
  EXPECT_FALSE(r.acquire(q("m"), &why));
  EXPECT_EQ(why, Router::Refusal::all_slots_busy);
  leases.pop_back();  // releasing frees exactly one slot
  EXPECT_TRUE(r.acquire(q("m")));
}

TEST_F(RouterTest, LeastOutstandingPrefersTheFreestInstance) {
  Router& r = make(config::RoutingPolicy::least_outstanding, {{"m", 4}, {"m", 4}, {"m", 4}});
  std::vector<RouteLease> leases;
  for (int i = 0; i < 6; ++i) leases.push_back(std::move(*r.acquire(q("m"))));
  EXPECT_EQ(r.in_flight(0), 2);
  EXPECT_EQ(r.in_flight(1), 2);
  EXPECT_EQ(r.in_flight(2), 2);
  // Free two on instance 1: the next two go there.
  std::erase_if(leases,
                [n = 0](const RouteLease& l) mutable { return l.instance() == 1 && n++ < 2; });
  EXPECT_EQ(r.acquire(q("m"))->instance(), 1u);
}

TEST_F(RouterTest, LeastOutstandingWeighsByCapacity) {
  Router& r = make(config::RoutingPolicy::least_outstanding, {{"m", 1}, {"m", 8}});
  std::vector<RouteLease> leases;
  for (int i = 0; i < 4; ++i) leases.push_back(std::move(*r.acquire(q("m"))));
  EXPECT_LE(r.in_flight(0), 1);
  EXPECT_GE(r.in_flight(1), 3);
}

TEST_F(RouterTest, RoundRobinRotates) {
  Router& r = make(config::RoutingPolicy::round_robin, {{"m", 4}, {"m", 4}, {"m", 4}});
  std::vector<std::size_t> order;
  for (int i = 0; i < 6; ++i) order.push_back(r.acquire(q("m"))->instance());  // released at once
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 0, 1, 2}));
}

TEST_F(RouterTest, OnlyRoutableInstancesOfTheModel) {
  add_instance(table, "a", 1, InstanceState::ejected);
  add_instance(table, "b", 1);
  Router r(table, make_routing_policy(config::RoutingPolicy::least_outstanding));
  Router::Refusal why{};
  EXPECT_FALSE(r.acquire(q("a"), &why));
  EXPECT_EQ(why, Router::Refusal::no_instance_ready);
  EXPECT_FALSE(r.pick_any(q("a")));
  table[0]->state = InstanceState::ready;
  EXPECT_EQ(r.acquire(q("a"))->instance(), 0u);
  EXPECT_EQ(r.pick_any(q("b")), 1u);
  // Admin state apart from health: a draining instance takes nothing new.
  table[1]->causes.set(fleet::AdminCause::operator_drain, true);
  EXPECT_FALSE(r.pick_any(q("b")));
}

TEST_F(RouterTest, AStartingInstanceIsWorthWaitingFor) {
  add_instance(table, "m", 1, InstanceState::starting).config.command = "engine";
  add_instance(table, "m", 1, InstanceState::crash_looping);
  Router r(table, make_routing_policy(config::RoutingPolicy::least_outstanding));
  Router::Refusal why{};
  EXPECT_FALSE(r.acquire(q("m"), &why));
  EXPECT_EQ(why, Router::Refusal::not_ready_yet);
  table[0]->state = InstanceState::down;
  EXPECT_FALSE(r.acquire(q("m"), &why));
  EXPECT_EQ(why, Router::Refusal::no_instance_ready);
}

TEST_F(RouterTest, NeverAnInstanceTheRequestAlreadyTried) {
  Router& r = make(config::RoutingPolicy::least_outstanding, {{"m", 4}, {"m", 4}, {"m", 4}});
  const std::vector<std::size_t> tried{0, 2};
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r.acquire(q("m", tried))->instance(), 1u);
  const std::vector<std::size_t> all{0, 1, 2};
  Router::Refusal why{};
  EXPECT_FALSE(r.acquire(q("m", all), &why));
  EXPECT_EQ(why, Router::Refusal::no_instance_ready);
}

TEST_F(RouterTest, AnInstanceOnTrialTakesOneRequestAtATime) {
  Router& r = make(config::RoutingPolicy::least_outstanding, {{"m", 4}});
  table[0]->on_trial = true;
  auto first = r.acquire(q("m"));
  ASSERT_TRUE(first);
  EXPECT_FALSE(r.acquire(q("m")));
  table[0]->on_trial = false;
  EXPECT_TRUE(r.acquire(q("m")));
}

TEST_F(RouterTest, SlotsLearnedLaterApply) {
  Router& r = make(config::RoutingPolicy::least_outstanding, {{"m", 1}});
  auto first = r.acquire(q("m"));
  EXPECT_FALSE(r.acquire(q("m")));
  table[0]->slots = 2;
  EXPECT_TRUE(r.acquire(q("m")));
}

TEST_F(RouterTest, InstancesAddedByAReloadAreCounted) {
  Router& r = make(config::RoutingPolicy::least_outstanding, {{"m", 1}});
  auto first = r.acquire(q("m"));
  add_instance(table, "m", 1);
  auto second = r.acquire(q("m"));
  ASSERT_TRUE(second);
  EXPECT_EQ(second->instance(), 1u);
  EXPECT_EQ(r.in_flight(1), 1);
}

TEST_F(RouterTest, AModelAddedByAReloadIsRouted) {
  Router& r = make(config::RoutingPolicy::round_robin, {{"m", 1}});
  Router::Refusal why{};
  EXPECT_FALSE(r.acquire(q("n"), &why));
  EXPECT_EQ(why, Router::Refusal::no_instance_ready);
  add_instance(table, "n", 1);
  add_instance(table, "m", 1);
  auto n = r.acquire(q("n"));
  ASSERT_TRUE(n);
  EXPECT_EQ(n->instance(), 1u);
  // The old model's instances are its own and the new one: never "n"'s.
  auto m1 = r.acquire(q("m")), m2 = r.acquire(q("m"));
  ASSERT_TRUE(m1 && m2);
  EXPECT_NE(m1->instance(), 1u);
  EXPECT_NE(m2->instance(), 1u);
  EXPECT_FALSE(r.acquire(q("m")));
}

TEST_F(RouterTest, ALeaseKeepsItsDecisionThroughMovesAndRelease) {
  Router r(table, make_routing_policy(config::RoutingOptions{config::RoutingPolicy::session}));
  add_instance(table, "m", 2);
  RouteQuery query = q("m");
  query.session = "s";
  RouteLease held;
  held = std::move(*r.acquire(query));  // as the route stage keeps it
  EXPECT_EQ(held.decision().reason, RouteReason::cold);
  EXPECT_NE(held.granted(), std::chrono::steady_clock::time_point{});
  held.release();
  EXPECT_EQ(held.decision().reason, RouteReason::cold);
  EXPECT_EQ(r.acquire(query)->decision().reason, RouteReason::hit);
}

TEST_F(RouterTest, ALeaseOutlivingItsRouterReleasesNothing) {
  Router& r = make(config::RoutingPolicy::least_outstanding, {{"m", 1}});
  auto lease = r.acquire(q("m"));
  router.reset();
  lease.reset();  // must not touch the destroyed router (ASan would say)
}

}  // namespace
}  // namespace switchyard::gateway
