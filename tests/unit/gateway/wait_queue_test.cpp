#include "gateway/wait_queue.h"

#include <gtest/gtest.h>
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <vector>

#include "../io_support.h"
#include "instance_table.h"

namespace switchyard::gateway {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;
using Outcome = Admission::Outcome;

// One model on one instance with one slot, and a queue in front of it.
struct QueueFixture : testing::Test {
  void SetUp() override {
    testing_support::add_instance(table, "m", 1);
    router.on_release([this](std::size_t, const std::string& model) { queue->dispatch(model); });
  }
  void make_queue(int max_length, std::chrono::milliseconds max_wait) {
    queue = std::make_unique<WaitQueue>(io.get_executor(), router,
                                        config::QueueOptions{max_length, max_wait});
    this->max_wait = max_wait;
  }
  // Runs `acquire` as a coroutine; the result lands in `out`.
  void spawn_acquire(std::vector<Admission>& out) {
    net::co_spawn(
        io,
        [this, &out]() -> net::awaitable<void> {
          Admission a = co_await queue->acquire(query, false, max_wait);
          out.push_back(std::move(a));
        },
        net::detached);
  }
  void settle() { switchyard::testing_support::settle(io); }
  template <class Done>
  void run_until(Done done) {
    switchyard::testing_support::run_until(io, done);
  }

  net::io_context io;
  InstanceTable table;
  Router router{table, make_routing_policy(config::RoutingPolicy::least_outstanding)};
  std::unique_ptr<WaitQueue> queue;
  std::chrono::milliseconds max_wait{};
  const RouteQuery query{"m", nullptr, {}, {}, {}};
};

TEST_F(QueueFixture, WaitersAreServedInOrderAsSlotsFree) {
  make_queue(8, 10s);
  std::vector<Admission> got;
  for (int i = 0; i < 3; ++i) spawn_acquire(got);
  settle();
  ASSERT_EQ(got.size(), 1u);  // one slot: one granted, two waiting
  EXPECT_EQ(got[0].outcome, Outcome::granted);
  EXPECT_EQ(queue->depth("m"), 2);
  got[0].lease = RouteLease();  // the first request ends
  settle();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].outcome, Outcome::granted);
  EXPECT_EQ(router.in_flight(0), 1);  // never more than the slot
  EXPECT_EQ(queue->depth("m"), 1);
}

TEST_F(QueueFixture, FullQueueRefusesAtOnce) {
  make_queue(1, 10s);
  std::vector<Admission> got;
  for (int i = 0; i < 3; ++i) spawn_acquire(got);
  settle();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].outcome, Outcome::queue_full);
}

TEST_F(QueueFixture, WaitIsBounded) {
  make_queue(8, 30ms);
  std::vector<Admission> got;
  spawn_acquire(got);
  spawn_acquire(got);
  run_until([&] { return got.size() == 2; });
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].outcome, Outcome::timed_out);
  EXPECT_GE(got[1].waited_seconds, 0.025);
  EXPECT_EQ(queue->depth("m"), 0);
}

TEST_F(QueueFixture, ACancelledWaiterLeavesTheQueue) {
  using namespace net::experimental::awaitable_operators;
  make_queue(8, 10s);
  std::vector<Admission> got;
  spawn_acquire(got);  // holds the slot
  bool cancelled = false;
  net::co_spawn(
      io,
      [&]() -> net::awaitable<void> {
        net::steady_timer client_leaves(io, 20ms);
        auto r = co_await (queue->acquire(query, false, max_wait) ||
                           client_leaves.async_wait(net::use_awaitable));
        cancelled = r.index() == 1;
      },
      net::detached);
  run_until([&] { return cancelled; });
  EXPECT_TRUE(cancelled);
  EXPECT_EQ(queue->depth("m"), 0);
  got[0].lease = RouteLease();
  EXPECT_EQ(router.in_flight(0), 0);  // the slot was not handed to the gone waiter
}

TEST_F(QueueFixture, ReleaseAllEndsEveryWait) {
  make_queue(8, 10s);
  std::vector<Admission> got;
  for (int i = 0; i < 3; ++i) spawn_acquire(got);
  settle();
  queue->release_all();
  settle();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[1].outcome, Outcome::shutting_down);
  EXPECT_EQ(got[2].outcome, Outcome::shutting_down);
}

TEST_F(QueueFixture, AWaiterAvoidingTheOnlyFreeInstanceKeepsWaiting) {
  testing_support::add_instance(table, "m", 1);
  make_queue(8, 10s);
  std::vector<Admission> got;
  spawn_acquire(got);
  spawn_acquire(got);  // both instances busy now
  std::optional<Admission> retry;
  const std::vector<std::size_t> tried{0};
  net::co_spawn(
      io,
      [&]() -> net::awaitable<void> {
        retry = co_await queue->acquire(RouteQuery{"m", nullptr, {}, {}, tried}, true, 10s);
      },
      net::detached);
  settle();
  ASSERT_FALSE(retry);
  const std::size_t first = got[0].lease.instance();
  got[first == 0 ? 0 : 1].lease = RouteLease();  // instance 0 frees: not for this waiter
  settle();
  EXPECT_FALSE(retry);
  got[first == 0 ? 1 : 0].lease = RouteLease();  // instance 1 frees
  settle();
  ASSERT_TRUE(retry);
  EXPECT_EQ(retry->lease.instance(), 1u);
}

TEST_F(QueueFixture, ARetryGoesAheadOfTheLine) {
  make_queue(8, 10s);
  std::vector<Admission> got;
  for (int i = 0; i < 3; ++i) spawn_acquire(got);  // one granted, two waiting
  std::optional<Admission> retry;
  net::co_spawn(
      io, [&]() -> net::awaitable<void> { retry = co_await queue->acquire(query, true, 10s); },
      net::detached);
  settle();
  ASSERT_EQ(got.size(), 1u);
  ASSERT_FALSE(retry);
  got[0].lease = RouteLease();  // the slot frees: the retry gets it, not the older waiters
  settle();
  ASSERT_TRUE(retry);
  EXPECT_EQ(retry->outcome, Outcome::granted);
  EXPECT_EQ(got.size(), 1u);
  EXPECT_EQ(queue->depth("m"), 2);
}

// Two instances of one slot each, both busy: a waiter bound to the first
// (its stored response is there) lets the one behind it take the second.
TEST(QueuePinned, AWaiterBoundToOneInstancePassesAnothersSlotOn) {
  net::io_context io;
  InstanceTable table;
  testing_support::add_instance(table, "m", 1);
  testing_support::add_instance(table, "m", 1);
  Router router{table, make_routing_policy(config::RoutingPolicy::least_outstanding)};
  WaitQueue queue(io.get_executor(), router, config::QueueOptions{8, 10s});
  router.on_release(
      [&](std::size_t index, const std::string& model) { queue.dispatch(model, index); });
  const RouteQuery any{"m", nullptr, {}, {}, {}};
  RouteQuery pinned = any;
  pinned.only = 0;
  auto busy0 = router.acquire(any);
  auto busy1 = router.acquire(any);
  ASSERT_TRUE(busy0 && busy1);
  std::vector<std::pair<int, Admission>> got;
  for (int who : {0, 1})
    net::co_spawn(
        io,
        [&, who]() -> net::awaitable<void> {
          got.emplace_back(who, co_await queue.acquire(who == 0 ? pinned : any, false, 10s));
        },
        net::detached);
  switchyard::testing_support::settle(io);
  ASSERT_TRUE(got.empty());
  const std::size_t second = busy1->instance();
  const std::size_t first = busy0->instance();
  (second == 1 ? busy1 : busy0) = std::nullopt;  // instance 1 frees
  switchyard::testing_support::settle(io);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first, 1) << "the unbound waiter behind took it";
  EXPECT_EQ(got[0].second.lease.instance(), 1u);
  (first == 0 ? busy0 : busy1) = std::nullopt;  // instance 0 frees
  switchyard::testing_support::settle(io);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].first, 0);
  EXPECT_EQ(got[1].second.lease.instance(), 0u);
}

}  // namespace
}  // namespace switchyard::gateway
