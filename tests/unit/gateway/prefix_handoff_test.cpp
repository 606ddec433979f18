// The wait queue's prefix handoff (issue 13): a slot freed on an instance
// goes to a waiter whose prompt that instance holds, within fairness: only
// among the waiters fair queueing allows next, never out of a key's own
// order or ahead of a higher priority band.
#include <gtest/gtest.h>
#include <boost/asio.hpp>

#include <deque>
#include <string>
#include <vector>

#include "gateway/routing/block_hash.h"
#include "gateway/wait_queue.h"
#include "instance_table.h"
#include "queue_driver.h"

namespace switchyard::gateway {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;

// Two instances of one slot each under prefix-affinity. The prompt `p`
// lives on the instance `on_p` (its slot held by `p_lease`), `q` on the
// other (held by `q_lease`); the test queues requests, frees one of them and
// records who got the slot.
struct PrefixHandoff : testing::Test {
  void SetUp() override {
    testing_support::add_instance(table, "m", 1);
    testing_support::add_instance(table, "m", 1);
    router.on_release(
        [this](std::size_t index, const std::string& model) { queue.dispatch(model, index); });
    p_lease = *router.acquire(query(p));
    q_lease = *router.acquire(query(q));
    ASSERT_NE(p_lease.instance(), q_lease.instance());
  }
  RouteQuery query(const std::string& prompt, std::string_view key = {}) {
    RouteQuery r;
    r.model = "m";
    r.prompt = prompt;
    r.key = key;
    return r;
  }
  void submit(std::string key, const std::string& prompt, std::string tag, int priority = 0) {
    keys.push_back(std::move(key));
    testing_support::submit(io, queue, query(prompt, keys.back()), QueueShare{priority, 1, 100},
                            10s, [this, tag](RouteLease lease) {
                              order.push_back(tag);
                              held.push_back(std::move(lease));
                            });
  }
  void run() { testing_support::run_ready(io); }

  const std::string p = std::string(8 * kBlockBytes, 'p'), q = std::string(8 * kBlockBytes, 'q'),
                    r = std::string(8 * kBlockBytes, 'r');
  std::deque<std::string> keys;  // stable addresses for the queries' views; outlives the queue
  net::io_context io;
  InstanceTable table;
  Router router{table, make_routing_policy(config::RoutingPolicy::prefix_affinity)};
  WaitQueue queue{io.get_executor(), router, config::QueueOptions{100, 10s}};
  RouteLease p_lease, q_lease;
  std::vector<RouteLease> held;
  std::vector<std::string> order;
};

TEST_F(PrefixHandoff, TheRouterScoresWhereAPromptLives) {
  EXPECT_EQ(router.match(query(p), p_lease.instance()), 1.0);
  EXPECT_EQ(router.match(query(p), q_lease.instance()), 0.0);
  EXPECT_EQ(router.match(query(r), p_lease.instance()), 0.0);
}

TEST_F(PrefixHandoff, AFreedSlotGoesToTheWaiterWhosePrefixLivesThere) {
  submit("first", q, "first-q");  // the fair pick: it came first
  submit("second", p, "second-p");
  p_lease.release();
  run();
  EXPECT_EQ(order, (std::vector<std::string>{"second-p"}));
  q_lease.release();
  run();
  EXPECT_EQ(order, (std::vector<std::string>{"second-p", "first-q"}));
}

TEST_F(PrefixHandoff, AKeysOwnRequestsStayInOrder) {
  submit("k", q, "k-q");
  submit("k", p, "k-p");
  p_lease.release();
  run();
  EXPECT_EQ(order, (std::vector<std::string>{"k-q"}));
}

TEST_F(PrefixHandoff, AHigherBandGoesFirstWhateverItsPrefix) {
  submit("low", p, "low-p", 0);
  submit("high", q, "high-q", 5);
  p_lease.release();
  run();
  EXPECT_EQ(order, (std::vector<std::string>{"high-q"}));
}

TEST_F(PrefixHandoff, AKeyServedAheadWaitsItsTurnWhereverItsPrefixLives) {
  submit("flood", r, "flood-r");
  submit("other", r, "other-r");
  q_lease.release();  // a tie, the earlier arrival: the flood's first
  run();
  ASSERT_EQ(order, (std::vector<std::string>{"flood-r"}));
  // The flood's next start tag is the other key's finish tag: not among
  // those fairness allows next, though its prompt lives on the freed slot.
  submit("flood", p, "flood-p");
  p_lease.release();
  run();
  EXPECT_EQ(order, (std::vector<std::string>{"flood-r", "other-r"}));
}

}  // namespace
}  // namespace switchyard::gateway
