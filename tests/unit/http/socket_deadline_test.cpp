#include "http/socket_deadline.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <optional>

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

}  // namespace
}  // namespace switchyard::http
