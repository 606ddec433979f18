// This gateway's own counters behind the Limiter interface, on a fake clock.
#include "tenancy/local_limits.h"

#include <gtest/gtest.h>

#include <boost/asio.hpp>

#include <optional>

#include "tenancy/shared_limits.h"

namespace switchyard::tenancy {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;

// LocalLimits answers at once: its awaitables complete within one run().
template <class T>
T await(net::awaitable<T> a) {
  net::io_context io;
  std::optional<T> out;
  net::co_spawn(
      io, [&]() -> net::awaitable<void> { out.emplace(co_await std::move(a)); },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  io.run();
  return std::move(*out);
}

struct LocalLimitsTest : testing::Test {
  Time now = Time{} + 1000h + 12h;
  LocalLimits limits{[this] { return now; }};
};

TEST_F(LocalLimitsTest, ARefusedRequestTakesNothingAndARefundGivesBackWhatWasTaken) {
  KeyLimits l;
  l.rpm = 2;
  l.tpm = 100;
  const auto a = limits.open("team", l, "");
  auto taken = *await(limits.take_rates(a, 60));
  EXPECT_EQ(taken.refused, RatesTaken::Refused::none);
  EXPECT_EQ(taken.requests.remaining, 1);
  EXPECT_EQ(taken.tokens.remaining, 40);
  const auto b = limits.open("team", l, "");
  auto refused = *await(limits.take_rates(b, 60));
  EXPECT_EQ(refused.refused, RatesTaken::Refused::tpm);
  EXPECT_EQ(refused.requests.remaining, 1);  // the refused request took no request either
  limits.refund(a);
  limits.close(a);
  EXPECT_EQ(await(limits.take_rates(b, 60))->refused, RatesTaken::Refused::none);
}

TEST_F(LocalLimitsTest, ASlotIsHeldUntilCloseAndASeatUntilItIdlesOut) {
  KeyLimits l;
  l.max_concurrency = 1;
  l.max_sessions = 1;
  l.session_idle = 1min;
  const auto a = limits.open("team", l, "agent-a");
  EXPECT_EQ(await(limits.acquire(a))->answer, SlotAnswer::taken);
  const auto b = limits.open("team", l, "agent-b");
  EXPECT_EQ(await(limits.acquire(b))->answer, SlotAnswer::concurrency_full);
  limits.close(a);
  const auto seat = *await(limits.acquire(b));
  EXPECT_EQ(seat.answer, SlotAnswer::sessions_full);
  EXPECT_EQ(seat.seat_frees_in, Duration(1min));
  EXPECT_EQ(limits.load("team")->running, 0);
  EXPECT_EQ(limits.load("team")->sessions, 1);
  now += 1min;
  EXPECT_EQ(await(limits.acquire(b))->answer, SlotAnswer::taken);
  EXPECT_EQ(limits.load("team")->running, 1);
}

// redis_down: local. The outage's split counters start from this gateway's
// share of what Redis last said was left, refilled since, so that two
// gateways together stay within the whole limit.
TEST_F(LocalLimitsTest, SplitCountersStartFromTheLastSharedReading) {
  KeyLimits whole;
  whole.rpm = 10;
  whole.tpm = 1000;
  whole.tokens_per_day = 10'000;
  RatesTaken read;
  read.requests.remaining = 4;
  read.tokens.remaining = 600;
  read.used_today = 4000;
  const auto split = split_limits(whole, 2);
  // What one request of 100 tokens finds left after a reading taken at `at`.
  const auto after_one = [&](Time at) {
    LocalLimits local([this] { return now; });
    local.set_limits("team", split);
    local.carry_on_from("team", {read, at}, whole, 2);
    return *await(local.take_rates(local.open("team", split, ""), 100));
  };
  const auto fresh = after_one(now);
  EXPECT_EQ(fresh.requests.remaining, 2 - 1);
  EXPECT_EQ(fresh.tokens.remaining, 300 - 100);
  EXPECT_EQ(fresh.used_today, 5000 - 3000 + 100);
  const auto older = after_one(now - 30s);  // half a minute refills 5 requests, 500 tokens
  EXPECT_EQ(older.requests.remaining, 4 - 1);
  EXPECT_EQ(older.tokens.remaining, 500 - 100);
  const auto yesterday = after_one(now - 24h);
  EXPECT_EQ(yesterday.used_today, 100);
  EXPECT_EQ(yesterday.requests.remaining, 5 - 1);
}

}  // namespace
}  // namespace switchyard::tenancy
