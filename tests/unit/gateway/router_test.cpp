#include "gateway/router.h"

#include <gtest/gtest.h>

#include <vector>

namespace switchyard::gateway {
namespace {

using fleet::RoutingPolicy;

// Ready instances of (model, slots).
void add_ready(Router& r, std::vector<std::pair<std::string, int>> instances) {
  for (std::size_t i = 0; i < instances.size(); ++i) {
    r.add_instance(i, instances[i].first, instances[i].second);
    r.set_ready(i, true);
  }
}

TEST(Router, NeverExceedsSlotsAndRefusesWhenFull) {
  Router r(RoutingPolicy::least_outstanding);
  add_ready(r, {{"m", 1}, {"m", 2}});
  std::vector<RouteLease> leases;
  for (int i = 0; i < 3; ++i) {
    auto l = r.acquire("m");
    ASSERT_TRUE(l) << i;
    leases.push_back(std::move(*l));
  }
  EXPECT_EQ(r.in_flight(0), 1);
  EXPECT_EQ(r.in_flight(1), 2);
  Router::Refusal why{};
  EXPECT_FALSE(r.acquire("m", &why));
  EXPECT_EQ(why, Router::Refusal::all_slots_busy);
  leases.pop_back();  // releasing frees exactly one slot
  EXPECT_TRUE(r.acquire("m"));
}

TEST(Router, LeastOutstandingPrefersTheFreestInstance) {
  Router r(RoutingPolicy::least_outstanding);
  add_ready(r, {{"m", 4}, {"m", 4}, {"m", 4}});
  std::vector<RouteLease> leases;
  for (int i = 0; i < 6; ++i) leases.push_back(std::move(*r.acquire("m")));
  EXPECT_EQ(r.in_flight(0), 2);
  EXPECT_EQ(r.in_flight(1), 2);
  EXPECT_EQ(r.in_flight(2), 2);
  // Free two on instance 1: the next two go there.
  std::erase_if(leases,
                [n = 0](const RouteLease& l) mutable { return l.instance() == 1 && n++ < 2; });
  EXPECT_EQ(r.acquire("m")->instance(), 1u);
}

TEST(Router, LeastOutstandingWeighsByCapacity) {
  Router r(RoutingPolicy::least_outstanding);
  add_ready(r, {{"m", 1}, {"m", 8}});
  std::vector<RouteLease> leases;
  for (int i = 0; i < 4; ++i) leases.push_back(std::move(*r.acquire("m")));
  EXPECT_LE(r.in_flight(0), 1);
  EXPECT_GE(r.in_flight(1), 3);
}

TEST(Router, RoundRobinRotates) {
  Router r(RoutingPolicy::round_robin);
  add_ready(r, {{"m", 4}, {"m", 4}, {"m", 4}});
  std::vector<std::size_t> order;
  for (int i = 0; i < 6; ++i) order.push_back(r.acquire("m")->instance());  // released at once
  EXPECT_EQ(order, (std::vector<std::size_t>{0, 1, 2, 0, 1, 2}));
}

TEST(Router, OnlyReadyInstancesOfTheModel) {
  Router r(RoutingPolicy::least_outstanding);
  r.add_instance(0, "a", 1);
  r.add_instance(1, "b", 1);
  Router::Refusal why{};
  EXPECT_FALSE(r.acquire("a", &why));
  EXPECT_EQ(why, Router::Refusal::no_instance_ready);
  r.set_ready(1, true);
  EXPECT_FALSE(r.acquire("a"));
  EXPECT_FALSE(r.any_ready("a"));
  r.set_ready(0, true);
  EXPECT_EQ(r.acquire("a")->instance(), 0u);
  EXPECT_EQ(r.any_ready("b"), 1u);
}

TEST(Router, SlotsLearnedLaterApply) {
  Router r(RoutingPolicy::least_outstanding);
  add_ready(r, {{"m", 1}});
  auto first = r.acquire("m");
  EXPECT_FALSE(r.acquire("m"));
  r.set_slots(0, 2);
  EXPECT_TRUE(r.acquire("m"));
}

}  // namespace
}  // namespace switchyard::gateway
