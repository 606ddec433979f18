// The wait queue's order across keys: priority bands, deficit round robin
// weighted by `weight` and charged in estimated tokens, FIFO within a key.
#include <gtest/gtest.h>
#include <boost/asio.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "gateway/wait_queue.h"
#include "instance_table.h"
#include "queue_driver.h"

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
    testing_support::submit(io, queue, RouteQuery{"m", nullptr, keys.back(), {}, {}}, share, 10s,
                            [this, tag](RouteLease lease) {
                              order.push_back(tag);
                              held = std::move(lease);
                            });
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
  void run() { testing_support::run_ready(io); }

  std::deque<std::string> keys;  // stable addresses for the queries' views; outlives the queue
  net::io_context io;
  InstanceTable table;
  Router router{table, make_routing_policy(config::RoutingPolicy::least_outstanding)};
  WaitQueue queue{io.get_executor(), router, config::QueueOptions{1000, 10s}};
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
  // Neither key served yet: the lighter backlog first; FIFO within a key.
  EXPECT_EQ(order[0], "lone");
  EXPECT_EQ(order[1], "f0");
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

// The flood against the lone key on a fake clock: every request holds its
// slot for exactly one service time; the flood keeps 50 requests waiting
// (closed loop: each one that ends is sent again); the lone key sends one
// request at a time, a varying think time after its last one ended, so its
// arrivals fall at every phase of the slots' service. Each request ends
// having used `used` tokens, and the queue is told (as the gateway tells it).
struct FloodVsLone : testing::Test {
  static constexpr long kService = 1000;  // fake milliseconds

  struct Running {
    long end;
    RouteLease lease;
    bool lone;
    QueueShare share;
  };

  // `slots` slots, busy with the flood's requests ending evenly spread over
  // one service time.
  void start(int slots, QueueShare flood, QueueShare lone) {
    flood_share = flood;
    lone_share = lone;
    testing_support::add_instance(table, "m", slots);
    router.on_release([this](std::size_t, const std::string& model) { queue.dispatch(model); });
    for (int i = 0; i < slots; ++i)
      running.push_back({kService * (i + 1) / slots,
                         *router.acquire(RouteQuery{"m", nullptr, flood_key, {}, {}}), false,
                         flood});
    for (int i = 0; i < 50; ++i) send(false);
    run();
  }
  void send(bool lone) {
    const long sent = now;
    net::co_spawn(
        io,
        [this, lone, sent]() -> net::awaitable<void> {
          QueueShare share = lone ? lone_share : flood_share;
          Admission a = co_await queue.acquire(
              RouteQuery{"m", nullptr, lone ? lone_key : flood_key, {}, {}}, false, 1h, share);
          if (a.outcome != Admission::Outcome::granted) co_return;
          if (lone) lone_waits.push_back(now - sent);
          if (lone && refill) send(true);
          share.charged = a.charged;
          running.push_back({now + kService, std::move(a.lease), lone, share});
        },
        net::detached);
  }
  void run() {
    io.restart();
    io.poll();
  }
  // Runs the fake clock from event to event until the lone key has been
  // served `n` requests; returns the longest of its waits.
  long worst_lone_wait(int n, std::int64_t used) {
    long next_lone = kService / 3;
    bool lone_out = false;
    while (static_cast<int>(lone_waits.size()) < n) {
      auto first =
          std::min_element(running.begin(), running.end(),
                           [](const Running& a, const Running& b) { return a.end < b.end; });
      if (!lone_out && next_lone <= first->end) {
        now = next_lone;
        lone_out = true;
        send(true);
        run();
        continue;
      }
      now = first->end;
      Running done = std::move(*first);
      running.erase(first);
      // As the gateway does: the slot is handed on first, then the usage is known.
      done.lease.release();
      run();
      queue.correct("m", done.lone ? lone_key : flood_key, done.share, used);
      if (done.lone) {
        lone_out = false;
        // Think times at every phase of a service time (a stride coprime to it).
        next_lone = now + (static_cast<long>(lone_waits.size()) * 379) % kService;
      } else {
        send(false);
        run();
      }
    }
    return *std::max_element(lone_waits.begin(), lone_waits.end());
  }

  const std::string flood_key = "flood", lone_key = "lone";
  net::io_context io;
  InstanceTable table;
  Router router{table, make_routing_policy(config::RoutingPolicy::least_outstanding)};
  WaitQueue queue{io.get_executor(), router, config::QueueOptions{1000, 3600s}};
  long now = 0;
  std::vector<Running> running;
  std::vector<long> lone_waits;
  QueueShare flood_share, lone_share;
  bool refill = false;  // the lone key sends again as soon as a request gets a slot
};

TEST_F(FloodVsLone, TheLoneKeyWaitsAtMostOneServiceTimeOnOneSlot) {
  start(1, QueueShare{0, 1, 100}, QueueShare{0, 1, 100});
  // Round robin that lets the flood's lane go first served the lone
  // request at the second freed slot: up to two service times.
  EXPECT_LE(worst_lone_wait(40, 100), kService);
}

TEST_F(FloodVsLone, AMaxTokensEstimateDoesNotCostTheLoneKeyItsTurn) {
  // The flood asks max_tokens 8, the lone key none (1024 reserved); both
  // use 100 tokens. Charged by the estimate, the lone key would wait for
  // about ten flood requests after each of its own.
  start(4, QueueShare{0, 1, 100}, QueueShare{0, 1, 1100});
  EXPECT_LE(worst_lone_wait(40, 100), kService);
}

TEST_F(FloodVsLone, AKeyRefillingItsLaneGetsItsShareNotEverySlot) {
  // The other key sends its next request the moment one gets a slot, so
  // its lane is always new to the queue: its virtual finish holds it to
  // half of the slot against the flood, not all of it.
  start(1, QueueShare{0, 1, 100}, QueueShare{0, 1, 100});
  refill = true;
  send(true);
  run();
  for (int i = 0; i < 200; ++i) {
    auto first = std::min_element(running.begin(), running.end(),
                                  [](const Running& a, const Running& b) { return a.end < b.end; });
    now = first->end;
    Running done = std::move(*first);
    running.erase(first);
    done.lease.release();
    run();
    if (!done.lone) send(false);
    run();
  }
  const auto lone = static_cast<long>(lone_waits.size());
  EXPECT_NEAR(lone, 100, 2);
}

}  // namespace
}  // namespace switchyard::gateway
