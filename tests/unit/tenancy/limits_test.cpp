#include "tenancy/limits.h"

#include <gtest/gtest.h>

#include <limits>

namespace switchyard::tenancy {
namespace {

using namespace std::chrono_literals;

// A fixed start: 2026-12-01 12:00:00 UTC.
const Time t0 = Time(std::chrono::seconds(1'796'126'400));

TEST(Gcra, AWholeMinuteMayComeAtOnceThenItRefillsEvenly) {
  Gcra rpm(6, 1min);  // one request every 10 s
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(rpm.take(t0, 1).ok) << i;
  auto refused = rpm.take(t0, 1);
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.retry_after, Duration(10s));
  EXPECT_EQ(rpm.remaining(t0), 0);
  EXPECT_EQ(rpm.reset(t0), Duration(60s));
  EXPECT_FALSE(rpm.take(t0 + 9s, 1).ok);
  EXPECT_TRUE(rpm.take(t0 + 10s, 1).ok);
  EXPECT_EQ(rpm.remaining(t0 + 70s), 6);
}

TEST(Gcra, CostsAreTokensAndACorrectionGivesThemBack) {
  Gcra tpm(1000, 1min);
  EXPECT_TRUE(tpm.take(t0, 800).ok);  // reserved: prompt estimate + max_tokens
  EXPECT_EQ(tpm.remaining(t0), 200);
  EXPECT_FALSE(tpm.peek(t0, 300).ok);
  tpm.adjust(100 - 800);  // the usage said 100
  EXPECT_EQ(tpm.remaining(t0), 900);
  EXPECT_TRUE(tpm.take(t0, 300).ok);
  EXPECT_FALSE(tpm.take(t0, 1001).ok);  // more than a minute's worth never fits
}

TEST(Gcra, StartsFromACountReadElsewhere) {
  Gcra rpm(6, 1min);
  rpm.start_at(t0, 2);
  EXPECT_EQ(rpm.remaining(t0), 2);
  EXPECT_TRUE(rpm.take(t0, 2).ok);
  EXPECT_FALSE(rpm.take(t0, 1).ok);
  EXPECT_EQ(rpm.remaining(t0 + 10s), 1);  // and refills as ever
  rpm.start_at(t0, 99);
  EXPECT_EQ(rpm.remaining(t0), 6);
}

TEST(Gcra, PeekTakesNothing) {
  Gcra rpm(1, 1min);
  EXPECT_TRUE(rpm.peek(t0, 1).ok);
  EXPECT_TRUE(rpm.peek(t0, 1).ok);
  EXPECT_TRUE(rpm.take(t0, 1).ok);
  EXPECT_FALSE(rpm.peek(t0 + 30s, 1).ok);
}

TEST(DayBudget, RenewsAtUtcMidnight) {
  DayBudget day(1000);
  EXPECT_TRUE(day.take(t0, 900).ok);
  auto refused = day.take(t0, 200);
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.retry_after, Duration(12h));  // t0 is noon UTC
  day.adjust(t0, -500);                           // corrected to the usage
  EXPECT_EQ(day.used(t0), 400);
  EXPECT_TRUE(day.take(t0 + 1h, 600).ok);
  EXPECT_EQ(day.used(t0 + 12h), 0);
  EXPECT_TRUE(day.take(t0 + 12h, 1000).ok);
}

// A cost near 2^63 (max_tokens as large as JSON allows) must not wrap
// around past the limit into one that fits.
TEST(DayBudget, AHugeCostNeverFits) {
  DayBudget day(1000);
  ASSERT_TRUE(day.take(t0, 10).ok);
  EXPECT_FALSE(day.peek(t0, std::numeric_limits<std::int64_t>::max()).ok);
  EXPECT_FALSE(day.take(t0, std::numeric_limits<std::int64_t>::max() - 5).ok);
  EXPECT_EQ(day.used(t0), 10);
}

TEST(SessionSeats, ASeatIsHeldUntilIdleAfterTheLastRequest) {
  SessionSeats seats(1, 5min);
  EXPECT_TRUE(seats.enter("a", t0));
  EXPECT_FALSE(seats.enter("b", t0));  // a's request runs: no seat
  EXPECT_EQ(seats.next_free(t0), std::nullopt);
  seats.leave("a", t0 + 1min);
  EXPECT_TRUE(seats.seated("a", t0 + 2min));
  EXPECT_EQ(seats.next_free(t0 + 2min), t0 + 6min);
  EXPECT_FALSE(seats.enter("b", t0 + 6min - 1s));
  EXPECT_TRUE(seats.enter("a", t0 + 6min - 1s));  // a seated session goes ahead
  seats.leave("a", t0 + 6min);
  EXPECT_FALSE(seats.enter("b", t0 + 10min));
  EXPECT_TRUE(seats.enter("b", t0 + 11min));  // a idled out
  EXPECT_FALSE(seats.seated("a", t0 + 11min));
  EXPECT_EQ(seats.active(t0 + 11min), 1);
}

TEST(SessionSeats, EveryRequestOfASessionMustEndBeforeItIdles) {
  SessionSeats seats(2, 1min);
  EXPECT_TRUE(seats.enter("a", t0));
  EXPECT_TRUE(seats.enter("a", t0));
  seats.leave("a", t0 + 1s);
  EXPECT_TRUE(seats.seated("a", t0 + 5min));  // one request still runs
  seats.leave("a", t0 + 5min);
  EXPECT_FALSE(seats.seated("a", t0 + 6min));
}

TEST(SessionSeats, ARequestWithoutASessionHoldsASeatOnlyWhileItRuns) {
  SessionSeats seats(1, 1h);
  const std::string one = one_request_session(1), two = one_request_session(2);
  EXPECT_TRUE(is_one_request_session(one));
  EXPECT_FALSE(is_one_request_session("agent-a"));
  EXPECT_NE(one, two);
  EXPECT_TRUE(seats.enter(one, t0));
  EXPECT_FALSE(seats.enter("agent-a", t0));  // it counts while it runs
  EXPECT_FALSE(seats.enter(two, t0));
  seats.leave(one, t0 + 1s);
  EXPECT_EQ(seats.active(t0 + 1s), 0);  // freed at once, not an hour later
  EXPECT_TRUE(seats.enter("agent-a", t0 + 1s));
}

}  // namespace
}  // namespace switchyard::tenancy
