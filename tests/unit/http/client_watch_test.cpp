#include "http/client_watch.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <optional>

#include "../io_support.h"

namespace switchyard::http {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using boost::asio::ip::tcp;

constexpr auto kTick = 20ms;

// A connected pair on loopback: `client` plays the HTTP client, `server` is
// the session's socket the watch looks at.
class ClientWatchTest : public ::testing::Test {
 protected:
  void SetUp() override { testing_support::connect_pair(io, client, server); }

  // Runs the loop until `gone_at` is set or `limit` passed (bounded).
  void run_for(Clock::duration limit) {
    const auto give_up = Clock::now() + limit;
    while (!gone_at && Clock::now() < give_up) {
      io.run_for(2ms);
      io.restart();
    }
  }

  boost::asio::io_context io;
  tcp::socket client{io}, server{io};
  ClientWatches watches{io.get_executor(), kTick};
  std::optional<Clock::time_point> gone_at;
};

TEST_F(ClientWatchTest, AClientThatClosesIsNoticedWithinTwoTicks) {
  const auto start = Clock::now();
  ClientWatch watch = watches.watch(server, [this] { gone_at = Clock::now(); });
  client.close();  // before the watch is armed
  run_for(2s);
  ASSERT_TRUE(gone_at) << "the client's close was never noticed";
  EXPECT_GE(*gone_at - start, kTick);       // not armed at once ...
  EXPECT_LT(*gone_at - start, 20 * kTick);  // ... but soon (generous: a busy machine)
}

TEST_F(ClientWatchTest, OnceArmedAClosingClientIsNoticedAtOnce) {
  ClientWatch watch = watches.watch(server, [this] { gone_at = Clock::now(); });
  io.run_for(3 * kTick);  // armed by now
  io.restart();
  ASSERT_FALSE(gone_at);
  const auto closed = Clock::now();
  client.close();
  run_for(2s);
  ASSERT_TRUE(gone_at);
  EXPECT_LT(*gone_at - closed, 10 * kTick);  // no waiting for ticks (generous: a busy machine)
}

TEST_F(ClientWatchTest, AResetWatchNeverCalls) {
  ClientWatch watch = watches.watch(server, [this] { gone_at = Clock::now(); });
  io.run_for(3 * kTick);  // armed
  io.restart();
  watch.reset();
  client.close();
  run_for(6 * kTick);
  EXPECT_FALSE(gone_at);
}

TEST_F(ClientWatchTest, DataFromTheClientMeansItIsStillThere) {
  ClientWatch watch = watches.watch(server, [this] { gone_at = Clock::now(); });
  boost::asio::write(client, boost::asio::buffer(std::string_view("GET / HTTP/1.1\r\n")));
  run_for(6 * kTick);
  EXPECT_FALSE(gone_at);
  // The pipelined bytes were only looked at, not consumed.
  char buf[16];
  EXPECT_EQ(server.read_some(boost::asio::buffer(buf)), sizeof buf);
}

TEST_F(ClientWatchTest, UntilClientLeavesCompletesWhenItCloses) {
  std::optional<bool> left;
  boost::asio::co_spawn(
      io, [&]() -> boost::asio::awaitable<void> { left = co_await until_client_leaves(server); },
      boost::asio::detached);
  io.run_for(10ms);
  io.restart();
  EXPECT_FALSE(left);
  client.close();
  const auto give_up = Clock::now() + 2s;
  while (!left && Clock::now() < give_up) {
    io.run_for(2ms);
    io.restart();
  }
  EXPECT_EQ(left, true);
}

}  // namespace
}  // namespace switchyard::http
