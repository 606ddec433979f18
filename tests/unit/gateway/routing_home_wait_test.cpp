// routing.home_wait: a request whose home is busy waits for it, for a
// bounded time, when the prefill a spill would redo takes longer than the
// wait; the wait queue leaves free slots to others meanwhile and hands the
// home's freed slot to its waiter. A fake clock moves time.
#include <gtest/gtest.h>
#include <boost/asio.hpp>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "gateway/routing/block_hash.h"
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

namespace net = boost::asio;
using namespace std::chrono_literals;

void busy(std::vector<Candidate>& c, std::size_t i) {
  c[i].in_flight = c[i].slots;
  c[i].free = false;
}

TEST(RoutingHomeWait, ABusyHomesSessionWaitsWhenItsPrefillOutweighsTheWaitThenSpills) {
  MeasuredFleet<SessionAffinity> f(2, 1);
  auto& [clock, p, c] = f;
  const std::string turn = prompt_of('s', 10000);  // 10 s of prefill elsewhere
  const auto placed = p.pick(query(turn, "s"), c);
  EXPECT_FALSE(placed.home_waited);
  const auto home = placed.position;
  busy(c, home);
  const auto first = p.pick(query(turn, "s"), c);
  ASSERT_TRUE(first.wait_until);
  EXPECT_EQ(*first.wait_until, *clock.now + 5s);
  clock.advance(2s);  // asked again (another slot freed): the same bound
  const auto again = p.pick(query(turn, "s"), c);
  ASSERT_TRUE(again.wait_until);
  EXPECT_EQ(*again.wait_until, *first.wait_until);
  clock.advance(3s);
  const auto spilled = p.pick(query(turn, "s"), c);
  EXPECT_FALSE(spilled.wait_until);
  EXPECT_NE(spilled.position, home);
  EXPECT_EQ(spilled.reason, RouteReason::bounded_out);
  ASSERT_TRUE(spilled.home_waited);
  EXPECT_DOUBLE_EQ(*spilled.home_waited, 5.0);
  EXPECT_EQ(p.home("s"), c[home].index);
  // The next turn that must wait starts a wait of its own.
  const auto next = p.pick(query(turn, "s"), c);
  ASSERT_TRUE(next.wait_until);
  EXPECT_EQ(*next.wait_until, *clock.now + 5s);
}

TEST(RoutingHomeWait, ASessionThatGetsItsHomeInTimeSaysHowLongItWaited) {
  MeasuredFleet<SessionAffinity> f(2, 1);
  auto& [clock, p, c] = f;
  const std::string turn = prompt_of('s', 10000);
  const auto home = p.pick(query(turn, "s"), c).position;
  auto busy_home = c;
  busy(busy_home, home);
  ASSERT_TRUE(p.pick(query(turn, "s"), busy_home).wait_until);
  clock.advance(1500ms);
  const auto got = p.pick(query(turn, "s"), c);  // the home's slot is free again
  EXPECT_EQ(got.position, home);
  EXPECT_EQ(got.reason, RouteReason::hit);
  ASSERT_TRUE(got.home_waited);
  EXPECT_DOUBLE_EQ(*got.home_waited, 1.5);
  EXPECT_FALSE(p.pick(query(turn, "s"), c).home_waited);  // nothing waited this time
}

TEST(RoutingHomeWait, AShortPromptARetryOrNoWaitSettingSpillsAtOnce) {
  FakeClock clock;
  SessionAffinity p(1.25, Homes(clock.fn()), HomeWait(5s, clock.fn()));
  SessionAffinity never(1.25, Homes(clock.fn()), HomeWait(0s, clock.fn()));
  auto c = fleet_of(2, 1);
  for (auto* policy : {&p, &never}) measure_prefill(*policy, c[0]);
  const std::string light = prompt_of('l', 2000), heavy = prompt_of('h', 10000);
  const auto light_home = p.pick(query(light, "light"), c).position;
  const auto heavy_home = never.pick(query(heavy, "heavy"), c).position;
  auto busy_light = c, busy_heavy = c;
  busy(busy_light, light_home);
  busy(busy_heavy, heavy_home);
  EXPECT_FALSE(p.pick(query(light, "light"), busy_light).wait_until);  // 2 s < 5 s
  EXPECT_FALSE(never.pick(query(heavy, "heavy"), busy_heavy).wait_until);
  const std::size_t tried[] = {9};
  RouteQuery retry = query(light, "light");
  retry.tried = tried;
  EXPECT_FALSE(p.pick(retry, busy_light).wait_until);
}

// A heavy session's first turn, while light sessions hold every slot but
// one beside the other heavy session: it waits for the lightest instance
// rather than take that slot, and goes there when its slot frees.
template <class Policy>
void heavy_new_session_waits_for_the_lightest() {
  FakeClock clock;
  Policy p(1.25, Homes(clock.fn()), HomeWait(5s, clock.fn()));
  auto c = fleet_of(4, 1);  // no prefill measured yet: the run has just begun
  const std::string heavy1 = prompt_of('a', 32000), heavy2 = prompt_of('b', 32000);
  const auto first = p.pick(query(heavy1, "heavy1"), c).position;
  std::vector<std::string> lights;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (i == first) continue;
    lights.push_back(prompt_of(static_cast<char>('l' + i), 500));
    ASSERT_NE(p.pick(query(lights.back(), "light" + std::to_string(i)), c).position, first);
    busy(c, i);
  }
  c[first].slots = 2;  // one of its two slots free
  c[first].in_flight = 1;
  ASSERT_TRUE(p.pick(query(heavy2, "heavy2"), c).wait_until);
  const std::size_t lightest = first == 0 ? 1 : 0;  // light homes tie: fleet order
  c[lightest].in_flight = 0;                        // its light request ends
  c[lightest].free = true;
  clock.advance(300ms);
  const auto went = p.pick(query(heavy2, "heavy2"), c);
  EXPECT_EQ(went.position, lightest);
  EXPECT_EQ(went.home_waited, 0.3);
}

TEST(RoutingHomeWait, AHeavyNewSessionWaitsForTheLightestInsteadOfJoiningTheOtherHeavyOne) {
  heavy_new_session_waits_for_the_lightest<SessionAffinity>();
  heavy_new_session_waits_for_the_lightest<PrefixAffinity>();
}

TEST(RoutingHomeWait, ANewSessionHeavierThanTheMeanWaitsThenMakesItsHomeWhereItWent) {
  FakeClock clock;
  SessionAffinity p(1.25, Homes(clock.fn()), HomeWait(5s, clock.fn()));
  auto c = fleet_of(2, 1);
  const std::string heavy = prompt_of('h', 20000), light = prompt_of('l', 500);
  const auto heavy_home = p.pick(query(heavy, "heavy"), c).position;
  const auto light_home = p.pick(query(light, "light"), c).position;
  ASSERT_NE(heavy_home, light_home);
  busy(c, light_home);
  c[heavy_home].slots = 2;  // one of its two slots free
  c[heavy_home].in_flight = 1;
  // A light new session does not wait for the lighter, busy one: spilled,
  // it unbalances nothing. A heavier one does, and spills at the bound.
  const std::string small = prompt_of('s', 500), mine = prompt_of('m', 40000);
  EXPECT_FALSE(p.pick(query(small, "small"), c).wait_until);
  ASSERT_TRUE(p.pick(query(mine, "mine"), c).wait_until);
  clock.advance(5s);
  const auto spilled = p.pick(query(mine, "mine"), c);
  EXPECT_EQ(spilled.position, heavy_home);
  EXPECT_EQ(p.home("mine"), c[heavy_home].index);  // its context is there now
}

TEST(RoutingHomeWait, UnmeasuredPrefillNeverWaits) {
  FakeClock clock;
  SessionAffinity p(1.25, Homes(clock.fn()), HomeWait(5s, clock.fn()));
  auto c = fleet_of(2, 1);
  const std::string turn = prompt_of('s', 100000);
  busy(c, p.pick(query(turn, "s"), c).position);
  EXPECT_FALSE(p.pick(query(turn, "s"), c).wait_until);
}

TEST(RoutingHomeWait, APrefixWaitsForTheInstanceHoldingIt) {
  MeasuredFleet<PrefixAffinity> f(2, 1);
  auto& [clock, p, c] = f;
  const std::string turn = prompt_of('p', 10000);
  const auto home = p.pick(query(turn, "s"), c).position;
  busy(c, home);
  const auto d = p.pick(query(turn, "s"), c);
  ASSERT_TRUE(d.wait_until);
  clock.advance(5s);
  const auto spilled = p.pick(query(turn, "s"), c);
  EXPECT_NE(spilled.position, home);
  EXPECT_EQ(spilled.home_waited, 5.0);
}

// The router and the queue: two instances of one slot.
struct HomeWaitQueue : testing::Test {
  void SetUp() override {
    testing_support::add_instance(table, "m", 1);
    testing_support::add_instance(table, "m", 1);
    auto p = std::make_unique<SessionAffinity>(1.25, Homes(clock.fn()), HomeWait(5s, clock.fn()));
    policy = p.get();
    router = std::make_unique<Router>(table, std::move(p));
    queue = std::make_unique<WaitQueue>(io.get_executor(), *router, config::QueueOptions{100, 60s});
    router->on_release(
        [this](std::size_t index, const std::string& model) { queue->dispatch(model, index); });
    measure_prefill(*policy, Candidate{0, 0, 1, true, 0, 0, &kGpu});
  }
  void submit(const std::string& prompt, std::string_view session, std::string tag) {
    sessions.emplace_back(session);
    testing_support::submit(io, *queue, query(prompt, sessions.back()), QueueShare{0, 1, 100}, 60s,
                            [this, tag](RouteLease lease) {
                              order.push_back(tag);
                              where.push_back(lease.instance());
                              held.push_back(std::move(lease));
                            });
  }
  void run() { testing_support::run_ready(io); }

  FakeClock clock;
  const std::string heavy = prompt_of('h', 10000), light = prompt_of('l', 100);
  std::deque<std::string> sessions;  // stable views for the queries
  net::io_context io;
  InstanceTable table;
  SessionAffinity* policy = nullptr;
  std::unique_ptr<Router> router;
  std::unique_ptr<WaitQueue> queue;
  std::vector<std::string> order;
  std::vector<std::size_t> where;
  std::vector<RouteLease> held;
};

TEST_F(HomeWaitQueue, TheWaiterLeavesTheFreeSlotToOthersAndGetsItsHomeWhenItFrees) {
  auto first = router->acquire(query(heavy, "s"));  // s's running turn: its home is busy
  ASSERT_TRUE(first);
  const std::size_t home = first->instance();
  Router::Refusal why = Router::Refusal::all_slots_busy;
  EXPECT_FALSE(router->acquire(query(heavy, "s"), &why));
  EXPECT_EQ(why, Router::Refusal::waiting_for_home);
  submit(heavy, "s", "s");  // waits for its home
  EXPECT_TRUE(order.empty());
  EXPECT_EQ(queue->depth("m"), 1);
  submit(light, "t", "t");  // the other instance is free: it takes it now
  ASSERT_EQ(order, (std::vector<std::string>{"t"}));
  EXPECT_NE(where[0], home);
  first->release();
  run();
  ASSERT_EQ(order, (std::vector<std::string>{"t", "s"}));
  EXPECT_EQ(where[1], home);
  EXPECT_EQ(queue->depth("m"), 0);
}

TEST_F(HomeWaitQueue, PastTheWaitTheRequestSpills) {
  auto first = router->acquire(query(heavy, "s"));
  ASSERT_TRUE(first);
  submit(heavy, "s", "s");
  EXPECT_TRUE(order.empty());
  clock.advance(5s);
  queue->dispatch("m");  // as the timer for the wait's end does
  run();
  ASSERT_EQ(order, (std::vector<std::string>{"s"}));
  EXPECT_NE(where[0], first->instance());
}

}  // namespace
}  // namespace switchyard::gateway
