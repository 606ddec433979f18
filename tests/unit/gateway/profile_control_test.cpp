// ProfileControl on a fake clock: what the route stage hears from it while
// an instance is busy with a long prefill.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "fake_exchange.h"
#include "fleet/fleet.h"
#include "gateway/profile_control.h"
#include "gateway/routes.h"
#include "gateway/routing/least_outstanding.h"
#include "profiles/switch_policy.h"

namespace switchyard::gateway {
namespace {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

constexpr const char* kConfig = R"(
models:
  - name: qwen
instances:
  - name: xtx0
    model: qwen
    gpus: [0]
    slots: 1
    command: sim --port ${PORT}
  - name: tp2
    model: qwen
    gpus: [0, 1]
    slots: 8
    command: sim --port ${PORT}
profiles:
  replicas: [xtx0]
  tp2: [tp2]
queue:
  max_wait: 10s
switching:
  max_hold: 5m
  estimates:
    xtx0: {decode_tps: 100, prefill_tps: 1000, prefill_half_depth: 46500, context: 196608}
    tp2: {decode_tps: 20, prefill_tps: 3000, prefill_half_depth: 65000, context: 163840}
)";

config::FleetConfig parsed() {
  auto c = config::parse_fleet_config(kConfig, "test.yaml");
  EXPECT_TRUE(c) << c.error().message;
  return *c;
}

struct ProfileControlTest : ::testing::Test {
  ProfileControlTest() {
    xtx0().state = fleet::InstanceState::ready;
    xtx0().slots = 1;
  }
  fleet::Instance& xtx0() { return *fleet.instances().at(0); }

  // A chat request for qwen whose prompt is about `tokens` long.
  std::unique_ptr<RequestContext> request(long tokens) {
    auto ctx = std::make_unique<RequestContext>(http_request, exchange,
                                                *find_route("/v1/chat/completions"));
    ctx->model = "qwen";
    ctx->facts.prompt.length = static_cast<std::size_t>(tokens) * 4;
    return ctx;
  }
  // The route stage's part: a slot on xtx0, then routed().
  void route(RequestContext& ctx) {
    RouteQuery q;
    q.model = ctx.model;
    auto lease = router.acquire(q);
    ASSERT_TRUE(lease);
    ctx.target = lease->instance();
    ctx.lease = std::move(*lease);
    control.routed(ctx);
  }

  boost::asio::io_context io;
  config::FleetConfig config = parsed();
  fleet::Fleet fleet{io.get_executor(), config, "/bin/true"};
  Router router{fleet.instances(), std::make_unique<LeastOutstanding>()};
  WaitQueue queue{io.get_executor(), router, config.queue};
  obs::GatewayMetrics metrics;
  steady::time_point now = steady::time_point{} + 1h;
  ProfileControl control{io.get_executor(),     config, fleet, router, queue, metrics,
                         [this] { return now; }};
  http::Request http_request;
  testing_support::FakeExchange exchange;
};

TEST_F(ProfileControlTest, BehindALongPrefillTheModelsRequestsWaitUpToMaxHoldUntilItEnds) {
  // 40,000 tokens at xtx0's 1,000 a second, slower with depth: over 40 s,
  // longer than half of queue.max_wait.
  const auto prefill = std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(
      profiles::prefill_seconds(config.switching.estimates.at("xtx0"), 40000)));
  ASSERT_GT(prefill, 40s);
  auto huge = request(40000);
  EXPECT_EQ(control.hold(*huge), std::nullopt);  // nothing ahead of it
  route(*huge);
  auto next = request(100);
  EXPECT_EQ(control.hold(*next), 5min);
  now += prefill - 1s;
  EXPECT_EQ(control.hold(*request(100)), 5min);
  now += 1s;  // the prefill is estimated done
  EXPECT_EQ(control.hold(*request(100)), std::nullopt);
}

TEST_F(ProfileControlTest, AShortPrefillHoldsNoOneBeyondTheQueuesOwnBound) {
  auto short_one = request(4000);  // 4 s: under half of queue.max_wait
  route(*short_one);
  EXPECT_EQ(control.hold(*request(100)), std::nullopt);
}

TEST_F(ProfileControlTest, ARequestForAModelOutsideTheProfilesIsNeverHeld) {
  auto other = request(40000);
  other->model = "embedder";
  EXPECT_EQ(control.hold(*other), std::nullopt);
}

}  // namespace
}  // namespace switchyard::gateway
