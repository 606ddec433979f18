// The router's side of the affinity policies: what it tells them and what
// it keeps from them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gateway/router.h"
#include "gateway/routing/block_hash.h"
#include "instance_table.h"
#include "routing_fixtures.h"

namespace switchyard::gateway {
namespace {

using testing_support::add_instance;
using testing_support::query;

TEST(RoutingRouter, TokenizerCallsLeaveNoAffinityBehind) {
  // A tokenizer call fills no engine cache: the prompt it carried is not
  // cached anywhere, and its session has no home.
  InstanceTable table;
  for (int i = 0; i < 4; ++i) add_instance(table, "m", 2);
  for (const auto policy :
       {config::RoutingPolicy::prefix_affinity, config::RoutingPolicy::session}) {
    Router r(table, make_routing_policy(policy));
    const std::string prompt(20 * kBlockBytes, 'p');
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(r.pick_any(query(prompt, "tok")));
    const auto lease = r.acquire(query(prompt, "tok"));
    ASSERT_TRUE(lease);
    EXPECT_EQ(lease->decision().reason, RouteReason::cold) << r.policy_name();
    if (policy == config::RoutingPolicy::prefix_affinity) {
      EXPECT_EQ(lease->decision().match, 0.0);
    }
  }
}

TEST(RoutingRouter, TokenizerCallsSpreadByRequestsPerSlot) {
  InstanceTable table;
  add_instance(table, "m", 1);
  add_instance(table, "m", 1);
  Router r(table, make_routing_policy(config::RoutingPolicy::session));
  const auto busy = r.acquire(query("", "s"));
  ASSERT_TRUE(busy);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r.pick_any(query("", "t")), 1 - busy->instance());
}

// Sends every request to the first free instance and keeps what it was
// shown of each instance.
class RecordingPolicy final : public gateway::RoutingPolicy {
 public:
  explicit RecordingPolicy(std::vector<Candidate>* seen) : seen_(seen) {}
  const char* name() const override { return "recording"; }
  RouteDecision pick(const RouteQuery&, std::span<const Candidate> candidates) override {
    seen_->assign(candidates.begin(), candidates.end());
    RouteDecision d;
    while (!candidates[d.position].free) ++d.position;
    d.match = match_;
    return d;
  }
  void finished(const Candidate&, const RouteFeedback&) override {}
  double match_ = 0;

 private:
  std::vector<Candidate>* seen_;
};

TEST(RoutingRouter, PoliciesSeeThePromptsAnInstanceHasNotStartedAnswering) {
  InstanceTable table;
  add_instance(table, "m", 4);
  add_instance(table, "m", 4);
  std::vector<Candidate> seen;
  auto owned = std::make_unique<RecordingPolicy>(&seen);
  RecordingPolicy& policy = *owned;
  Router r(table, std::move(owned));
  const std::string long_prompt(32000 * 4, 'a'), short_prompt(2000 * 4, 'b');
  auto first = r.acquire(query(long_prompt, "s1"));
  ASSERT_TRUE(first);
  policy.match_ = 0.75;  // three quarters of it cached there: a quarter to evaluate
  auto second = r.acquire(query(short_prompt, "s2"));
  ASSERT_TRUE(second);
  ASSERT_TRUE(r.acquire(query("", "s3")));
  EXPECT_EQ(seen[0].prefilling, 32000 + 500);
  EXPECT_EQ(seen[1].prefilling, 0);

  first->answering();  // its first token went out
  first->answering();  // counted once
  ASSERT_TRUE(r.acquire(query("", "s4")));
  EXPECT_EQ(seen[0].prefilling, 500);
  second->release();  // ended (or failed) before answering
  ASSERT_TRUE(r.acquire(query("", "s5")));
  EXPECT_EQ(seen[0].prefilling, 0);
}

TEST(RoutingRouter, PoliciesSeeTheShortestPromptAnInstanceRuns) {
  InstanceTable table;
  add_instance(table, "m", 4);
  std::vector<Candidate> seen;
  Router r(table, std::make_unique<RecordingPolicy>(&seen));
  const std::string long_prompt(32000 * 4, 'a'), short_prompt(2000 * 4, 'b');
  auto heavy = r.acquire(query(long_prompt, "s1"));
  ASSERT_TRUE(heavy);
  EXPECT_EQ(seen[0].shortest_running, 0);  // idle when it was chosen
  auto light = r.acquire(query(short_prompt, "s2"));
  ASSERT_TRUE(light);
  light->answering();  // answering still runs
  ASSERT_TRUE(r.acquire(query("", "s3")));
  EXPECT_EQ(seen[0].shortest_running, 2000);
  light->release();
  ASSERT_TRUE(r.acquire(query("", "s4")));
  EXPECT_EQ(seen[0].shortest_running, 32000);
  heavy->release();
  ASSERT_TRUE(r.acquire(query("", "s5")));
  EXPECT_EQ(seen[0].shortest_running, 0);
}

constexpr config::RoutingPolicy kEveryPolicy[] = {
    config::RoutingPolicy::least_outstanding, config::RoutingPolicy::round_robin,
    config::RoutingPolicy::session, config::RoutingPolicy::prefix_affinity};

TEST(RoutingRouter, AnEngineAsleepByItsOwnWordIsTheLastResort) {
  // It would load its model again, with an empty cache: an awake instance
  // with a free slot goes first, whatever the policy, even a busier one.
  using Sleep = fleet::Instance::EngineSleep;
  for (const auto policy : kEveryPolicy) {
    InstanceTable table;
    add_instance(table, "m", 2).engine_sleep = Sleep::asleep;
    add_instance(table, "m", 2);
    Router r(table, make_routing_policy(policy));
    const auto first = r.acquire(query("a prompt", "s1"));
    const auto second = r.acquire(query("a prompt", "s2"));
    ASSERT_TRUE(first && second) << r.policy_name();
    EXPECT_EQ(first->instance(), 1u) << r.policy_name();
    EXPECT_EQ(second->instance(), 1u) << r.policy_name();
    EXPECT_EQ(r.pick_any(query("", "t")), 1u) << r.policy_name();
    // The awake one is full: waking the other beats waiting.
    const auto third = r.acquire(query("a prompt", "s3"));
    ASSERT_TRUE(third) << r.policy_name();
    EXPECT_EQ(third->instance(), 0u) << r.policy_name();
  }
}

TEST(RoutingRouter, AnEngineThatFallsAsleepIsTheLastResortFromTheNextRequestOn) {
  // The router keeps a model's candidates between requests: a change to an
  // instance after they were built reaches the very next pick.
  using Sleep = fleet::Instance::EngineSleep;
  for (const auto policy : kEveryPolicy) {
    InstanceTable table;
    add_instance(table, "m", 2);
    add_instance(table, "m", 2);
    Router r(table, make_routing_policy(policy));
    ASSERT_TRUE(r.acquire(query("a prompt", "s0"))) << r.policy_name();  // released at once
    table[0]->engine_sleep = Sleep::asleep;
    const auto first = r.acquire(query("a prompt", "s1"));
    const auto second = r.acquire(query("a prompt", "s2"));
    ASSERT_TRUE(first && second) << r.policy_name();
    EXPECT_EQ(first->instance(), 1u) << r.policy_name();
    EXPECT_EQ(second->instance(), 1u) << r.policy_name();
    table[0]->engine_sleep = Sleep::awake;
    const auto third = r.acquire(query("a prompt", "s3"));
    ASSERT_TRUE(third) << r.policy_name();
    EXPECT_EQ(third->instance(), 0u) << r.policy_name();
  }
}

}  // namespace
}  // namespace switchyard::gateway
