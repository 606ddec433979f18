// The wait queue's order across keys: priority bands, deficit round robin
// weighted by `weight` and charged in estimated tokens, FIFO within a key.
#include <gtest/gtest.h>
#include <boost/asio.hpp>

#include <string>
#include <vector>

#include "gateway/wait_queue.h"
#include "instance_table.h"

namespace switchyard::gateway {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;

// One slot; the test holds it, queues requests, then frees the slot one
// request at a time and records who got it.
struct FairQueue : testing::Test {
  void SetUp() override {
    testing_support::add_instance(table, "m", 1);
    router.on_release([this](std::size_t, const std::string& model) { queue.dispatch(model); });
    hold = *router.acquire(RouteQuery{"m", nullptr, {}, {}, {}});
  }
  // Queues a request of `key` (a label `tag` for the order).
  void submit(std::string key, std::string tag, QueueShare share = {}) {
    keys.push_back(std::move(key));
    const std::string* k = &keys.back();
    net::co_spawn(
        io,
        [this, k, tag, share]() -> net::awaitable<void> {
          Admission a =
              co_await queue.acquire(RouteQuery{"m", nullptr, *k, {}, {}}, false, 10s, share);
          if (a.outcome != Admission::Outcome::granted) co_return;
          order.push_back(tag);
          held = std::move(a.lease);
        },
        net::detached);
    run();
  }
  // Frees the slot `n` times, each time to the next waiter.
  void serve(int n) {
    hold = RouteLease();
    run();
    for (int i = 1; i < n; ++i) {
      held = RouteLease();
      run();
    }
  }
  void run() {
    io.restart();
    io.poll();
  }

  std::deque<std::string> keys;  // stable addresses for the queries' views; outlives the queue
  net::io_context io;
  InstanceTable table;
  Router router{table, make_routing_policy(fleet::RoutingPolicy::least_outstanding)};
  WaitQueue queue{io.get_executor(), router, fleet::QueueOptions{1000, 10s}};
  RouteLease hold, held;
  std::vector<std::string> order;
};

TEST_F(FairQueue, ALoneRequestIsNotStuckBehindAnotherKeysFlood) {
  for (int i = 0; i < 50; ++i) submit("flood", "f" + std::to_string(i));
  submit("lone", "lone");
  serve(3);
  // FIFO would serve all 50 first; round robin serves the lone key within a round.
  ASSERT_EQ(order.size(), 3u);
  EXPECT_NE(std::find(order.begin(), order.end(), "lone"), order.end()) << order[0] << order[1];
  EXPECT_EQ(order[0], "f0");  // FIFO within a key
}

TEST_F(FairQueue, WeightsShareSlotsInProportion) {
  for (int i = 0; i < 30; ++i) {
    submit("heavy", "h", QueueShare{0, 3, 10});
    submit("light", "l", QueueShare{0, 1, 10});
  }
  serve(20);
  const auto heavy = std::count(order.begin(), order.end(), "h");
  EXPECT_GE(heavy, 14);  // 3:1 of 20 is 15
  EXPECT_LE(heavy, 16);
}

TEST_F(FairQueue, ChargedInTokensNotRequests) {
  for (int i = 0; i < 20; ++i) {
    submit("big", "b", QueueShare{0, 1, 1000});
    for (int j = 0; j < 10; ++j) submit("small", "s", QueueShare{0, 1, 100});
  }
  serve(22);
  // Ten small requests cost what one big one does.
  const auto big = std::count(order.begin(), order.end(), "b");
  EXPECT_GE(big, 1);
  EXPECT_LE(big, 3);
}

TEST_F(FairQueue, HigherPriorityBandsGoFirst) {
  submit("low", "low1", QueueShare{0, 1, 10});
  submit("low", "low2", QueueShare{0, 1, 10});
  submit("high", "high1", QueueShare{5, 1, 10});
  submit("high", "high2", QueueShare{5, 1, 10});
  serve(4);
  EXPECT_EQ(order, (std::vector<std::string>{"high1", "high2", "low1", "low2"}));
}

TEST_F(FairQueue, ARevokedKeysWaitersAreRefusedAtOnce) {
  std::vector<Admission::Outcome> outcomes;
  keys.push_back("gone");
  for (int i = 0; i < 2; ++i)
    net::co_spawn(
        io,
        [&]() -> net::awaitable<void> {
          Admission a =
              co_await queue.acquire(RouteQuery{"m", nullptr, keys.back(), {}, {}}, false, 10s);
          outcomes.push_back(a.outcome);
        },
        net::detached);
  run();
  EXPECT_EQ(queue.depth("m"), 2);
  queue.refuse_key("gone");
  run();
  EXPECT_EQ(outcomes, (std::vector<Admission::Outcome>(2, Admission::Outcome::key_revoked)));
  EXPECT_EQ(queue.depth("m"), 0);
}

}  // namespace
}  // namespace switchyard::gateway
