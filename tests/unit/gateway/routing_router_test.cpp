// The router's side of the affinity policies: what it tells them and what
// it keeps from them.
#include <gtest/gtest.h>

#include <string>

#include "gateway/router.h"
#include "gateway/routing/block_hash.h"
#include "instance_table.h"

namespace switchyard::gateway {
namespace {

using fleet::RoutingPolicy;
using testing_support::add_instance;

RouteQuery query(std::string_view prompt, std::string_view session) {
  return RouteQuery{"m", nullptr, {}, session, {}, prompt};
}

TEST(RoutingRouter, TokenizerCallsLeaveNoAffinityBehind) {
  // A tokenizer call fills no engine cache: the prompt it carried is not
  // cached anywhere, and its session has no home.
  InstanceTable table;
  for (int i = 0; i < 4; ++i) add_instance(table, "m", 2);
  for (const auto policy : {RoutingPolicy::prefix_affinity, RoutingPolicy::session}) {
    Router r(table, make_routing_policy(policy));
    const std::string prompt(20 * kBlockBytes, 'p');
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(r.pick_any(query(prompt, "tok")));
    const auto lease = r.acquire(query(prompt, "tok"));
    ASSERT_TRUE(lease);
    EXPECT_EQ(lease->decision().reason, RouteReason::cold) << r.policy_name();
    if (policy == RoutingPolicy::prefix_affinity) {
      EXPECT_EQ(lease->decision().match, 0.0);
    }
  }
}

TEST(RoutingRouter, TokenizerCallsSpreadByRequestsPerSlot) {
  InstanceTable table;
  add_instance(table, "m", 1);
  add_instance(table, "m", 1);
  Router r(table, make_routing_policy(RoutingPolicy::session));
  const auto busy = r.acquire(query("", "s"));
  ASSERT_TRUE(busy);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r.pick_any(query("", "t")), 1 - busy->instance());
}

}  // namespace
}  // namespace switchyard::gateway
