#include "http/heap_trim.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstddef>
#include <memory>
#include <vector>

#include "http/descriptor_states.h"

namespace switchyard::http {
namespace {

using namespace std::chrono_literals;

// A trimmer with a counting trim and no delay; io.run() returns once any
// trim that was scheduled has run.
struct HeapTrimmerTest : ::testing::Test {
  boost::asio::io_context io;
  int trims = 0;
  HeapTrimmer trimmer{io.get_executor(), HeapTrimOptions{.burst = 100, .delay = 0ms},
                      [this] { ++trims; }};

  void open(std::size_t n) {
    for (std::size_t i = 1; i <= n; ++i) trimmer.opened(i);
  }
  void close_down_to(std::size_t from, std::size_t to) {
    for (std::size_t open = from; open > to; --open) trimmer.closed(open - 1);
  }
};

TEST_F(HeapTrimmerTest, OneTrimForABurstOfCloses) {
  open(1000);
  close_down_to(1000, 0);
  io.run();
  EXPECT_EQ(trims, 1);
  EXPECT_EQ(trimmer.trims(), 1u);
}

TEST_F(HeapTrimmerTest, FewerClosesThanABurstDoNotTrim) {
  open(1000);
  close_down_to(1000, 901);
  io.run();
  EXPECT_EQ(trims, 0);
}

TEST_F(HeapTrimmerTest, ConnectionsThatComeAndGoOneAtATimeNeverTrim) {
  for (int i = 0; i < 10'000; ++i) {
    trimmer.opened(3);
    trimmer.closed(2);
  }
  io.run();
  EXPECT_EQ(trims, 0);
}

TEST_F(HeapTrimmerTest, EachLaterBurstTrimsAgain) {
  for (int round = 1; round <= 3; ++round) {
    open(500);
    close_down_to(500, 0);
    io.restart();
    io.run();
    EXPECT_EQ(trims, round);
  }
}

TEST_F(HeapTrimmerTest, ABurstCountsFromTheLastTrimNotTheFirstPeak) {
  open(1000);
  close_down_to(1000, 800);  // a burst: trims, and 800 is the new peak
  io.run();
  ASSERT_EQ(trims, 1);
  close_down_to(800, 750);  // 50 more since the trim: no burst
  io.restart();
  io.run();
  EXPECT_EQ(trims, 1);
}

TEST(HeapTrimmer, ABurstThatGoesOnIsTrimmedAgainWhenItStops) {
  // Closes every 10 ms for 1 s, the delay 200 ms: the first trim comes due
  // at once and runs 4 delays later while the closes go on; one more runs
  // when they stop, so none of the burst is left untrimmed.
  boost::asio::io_context io;
  int trims = 0;
  HeapTrimmer trimmer(io.get_executor(), HeapTrimOptions{.burst = 100, .delay = 200ms},
                      [&] { ++trims; });
  for (std::size_t i = 1; i <= 1100; ++i) trimmer.opened(i);
  std::size_t open = 1100;
  for (int step = 0; step < 100; ++step) {
    for (int k = 0; k < 11; ++k) trimmer.closed(--open);
    io.restart();
    io.run_for(10ms);
  }
  ASSERT_EQ(open, 0u);
  io.restart();
  io.run();
  EXPECT_EQ(trims, 2);
}

TEST(HeapTrimmer, FreesAsiosStatesOfTheClosedSocketsBeforeItTrims) {
  boost::asio::io_context io;
  std::size_t held_at_trim = 0;
  HeapTrimmer trimmer(io.get_executor(), HeapTrimOptions{.burst = 100, .delay = 0ms},
                      [&] { held_at_trim = descriptor_state_bytes(); });
  std::vector<boost::asio::ip::tcp::socket> sockets;
  for (std::size_t i = 1; i <= 600; ++i) {
    sockets.emplace_back(io);
    sockets.back().open(boost::asio::ip::tcp::v4());
    trimmer.opened(i);
  }
  const std::size_t held_open = descriptor_state_bytes();
  while (!sockets.empty()) {
    sockets.pop_back();
    trimmer.closed(sockets.size());
  }
  io.run();
  ASSERT_EQ(trimmer.trims(), 1u);
  EXPECT_LE(held_at_trim, held_open - 2 * 256 * 168);  // two chunks of states at least
}

TEST(HeapTrimmer, CancelledTrimNeverRuns) {
  boost::asio::io_context io;
  int trims = 0;
  auto trimmer = std::make_unique<HeapTrimmer>(io.get_executor(), HeapTrimOptions{.burst = 1},
                                               [&trims] { ++trims; });
  trimmer->opened(2);
  trimmer->closed(0);
  trimmer.reset();  // gone with its trim pending
  io.run();
  EXPECT_EQ(trims, 0);
}

}  // namespace
}  // namespace switchyard::http
