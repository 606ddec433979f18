#include "http/socket_deadline.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <memory>
#include <optional>
#include <vector>

namespace switchyard::http {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A deadline on a fresh io_context that records when it expired.
class SocketDeadlineTest : public ::testing::Test {
 protected:
  // Runs the loop until the deadline expired or two seconds passed (bounded:
  // a broken deadline fails the test instead of hanging it).
  void run_until_expired() {
    const auto give_up = Clock::now() + 2s;
    while (!fired_at && Clock::now() < give_up) {
      io.run_for(5ms);
      io.restart();
    }
    ASSERT_TRUE(fired_at) << "the deadline never expired";
  }

  boost::asio::io_context io;
  std::optional<Clock::time_point> fired_at;
  std::optional<SocketDeadline> deadline{std::in_place, io.get_executor(),
                                         [this] { fired_at = Clock::now(); }};
};

TEST_F(SocketDeadlineTest, ExpiresAfterTheTimeout) {
  const auto start = Clock::now();
  deadline->expires_after(30ms);
  EXPECT_FALSE(deadline->expired());
  ASSERT_NO_FATAL_FAILURE(run_until_expired());
  EXPECT_TRUE(deadline->expired());
  EXPECT_GE(*fired_at - start, 30ms);
}

TEST_F(SocketDeadlineTest, ExpiresNeverStopsIt) {
  deadline->expires_after(10ms);
  deadline->expires_never();
  io.run_for(60ms);
  EXPECT_FALSE(fired_at);
  EXPECT_FALSE(deadline->expired());
}

TEST_F(SocketDeadlineTest, ALaterDeadlineReplacesAnEarlierOne) {
  deadline->expires_after(20ms);
  // Each operation sets its own deadline: the timer armed for the first one
  // wakes early and waits on for the second.
  boost::asio::steady_timer later(io, 10ms);
  Clock::time_point second_set;
  later.async_wait([&](const boost::system::error_code&) {
    second_set = Clock::now();
    deadline->expires_after(60ms);
  });
  ASSERT_NO_FATAL_FAILURE(run_until_expired());
  EXPECT_GE(*fired_at - second_set, 60ms);
}

TEST_F(SocketDeadlineTest, AnEarlierDeadlineIsHonoured) {
  deadline->expires_after(10s);
  const auto start = Clock::now();
  deadline->expires_after(20ms);
  ASSERT_NO_FATAL_FAILURE(run_until_expired());
  EXPECT_GE(*fired_at - start, 20ms);
  EXPECT_LT(*fired_at - start, 5s);
}

TEST_F(SocketDeadlineTest, ExpiredResetsWithTheNextOperation) {
  deadline->expires_after(5ms);
  ASSERT_NO_FATAL_FAILURE(run_until_expired());
  ASSERT_TRUE(deadline->expired());
  deadline->expires_after(10s);
  EXPECT_FALSE(deadline->expired());
}

TEST_F(SocketDeadlineTest, DestroyedWhileArmedDoesNotFire) {
  deadline->expires_after(5ms);
  deadline.reset();
  io.run_for(40ms);
  EXPECT_FALSE(fired_at);
}

// The deadlines of one context share its timer: each still expires at its
// own time, in the order they are due, whatever the order they were set
// in, and one destroyed or stopped does not take the others with it.
TEST_F(SocketDeadlineTest, TheDeadlinesOfOneContextEachExpireAtTheirOwnTime) {
  constexpr int kDeadlines = 40;
  std::vector<int> order;
  std::vector<std::unique_ptr<SocketDeadline>> deadlines;
  for (int i = 0; i < kDeadlines; ++i)
    deadlines.push_back(
        std::make_unique<SocketDeadline>(io.get_executor(), [&order, i] { order.push_back(i); }));
  // Due 5 ms apart, set in a shuffled order: i * 7 mod 40 visits each once.
  const auto start = Clock::now();
  for (int k = 0; k < kDeadlines; ++k) {
    const int i = k * 7 % kDeadlines;
    deadlines[i]->expires_after(std::chrono::milliseconds(10 + 5 * i));
  }
  deadlines[3].reset();             // destroyed while queued
  deadlines[5]->expires_never();    // its operation completed
  deadlines[8]->expires_after(1s);  // a later deadline for the same socket
  const auto give_up = start + 2s;
  while (order.size() < kDeadlines - 3 && Clock::now() < give_up) {
    io.run_for(5ms);
    io.restart();
  }
  std::vector<int> expected;
  for (int i = 0; i < kDeadlines; ++i)
    if (i != 3 && i != 5 && i != 8) expected.push_back(i);
  EXPECT_EQ(order, expected);
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(10 + 5 * (kDeadlines - 1)));
  EXPECT_FALSE(deadlines[5]->expired());
  EXPECT_FALSE(deadlines[8]->expired());
  EXPECT_TRUE(deadlines[39]->expired());
}

// Each context has its own queue: a deadline on a context that is not run
// does not fire, and one on a context that is does.
TEST_F(SocketDeadlineTest, EachContextKeepsItsOwnDeadlines) {
  boost::asio::io_context other;
  bool other_fired = false;
  SocketDeadline elsewhere(other.get_executor(), [&] { other_fired = true; });
  elsewhere.expires_after(1ms);
  deadline->expires_after(20ms);
  ASSERT_NO_FATAL_FAILURE(run_until_expired());
  EXPECT_FALSE(other_fired);
  other.run_for(40ms);
  EXPECT_TRUE(other_fired);
}

}  // namespace
}  // namespace switchyard::http
