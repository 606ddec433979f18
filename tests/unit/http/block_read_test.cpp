#include "http/block_read.h"

#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <optional>
#include <string>

#include "../io_support.h"
#include "http/read_buffer.h"

namespace switchyard::http {
namespace {

namespace net = boost::asio;
using net::ip::tcp;
using namespace std::chrono_literals;

struct ReadOutcome {
  boost::system::error_code ec;
  std::size_t bytes = 0;
};

// A BlockReadSocket connected to a plain socket over loopback.
class BlockReadTest : public ::testing::Test {
 protected:
  BlockReadTest() { testing_support::connect_pair(io, socket, peer); }

  // Starts a block read into `buffer`; its outcome lands in `done`.
  template <class Handler>
  void read(Handler handler, bool now = false) {
    done.reset();
    socket.async_read_block(buffer, 64 * 1024, now, std::move(handler));
  }
  void read(bool now = false) {
    read([this](boost::system::error_code ec, std::size_t n) { done = ReadOutcome{ec, n}; }, now);
  }

  // Runs the loop until the read completed or two seconds passed.
  void run_until_done() {
    testing_support::run_until(
        io, [this] { return done.has_value(); }, 2s);
    ASSERT_TRUE(done) << "the read never completed";
  }

  // What the buffer holds, consumed.
  std::string take() {
    std::string out(static_cast<const char*>(buffer.data().data()), buffer.size());
    buffer.consume(buffer.size());
    return out;
  }

  void send(const std::string& bytes) { net::write(peer, net::buffer(bytes)); }

  net::io_context io;
  BlockReadSocket socket{io.get_executor()};
  tcp::socket peer{io};
  ReadBuffer buffer;
  std::optional<ReadOutcome> done;
};

TEST_F(BlockReadTest, AWaitingReadHoldsNoBlockAndTakesOneWhenBytesCome) {
  buffer.reserve(kReadBlock);
  read();
  testing_support::settle(io);
  EXPECT_FALSE(done) << "nothing was sent";
  EXPECT_EQ(buffer.capacity(), 0u) << "a waiting read holds no block";
  send("hello");
  run_until_done();
  EXPECT_FALSE(done->ec) << done->ec.message();
  EXPECT_EQ(done->bytes, 5u);
  EXPECT_EQ(buffer.capacity(), kReadBlock);
  EXPECT_EQ(take(), "hello");
}

// After a read that did not fill the block the next one waits for the
// socket's next edge: it must still see what comes then, and a read that
// filled the block must be followed by one that takes the rest.
TEST_F(BlockReadTest, ReadsWhatFollowsAShortReadAndWhatFillsTheBlock) {
  for (const std::string part : {"one", "two", "three"}) {
    read();
    testing_support::settle(io);
    send(part);
    run_until_done();
    ASSERT_FALSE(done->ec) << done->ec.message();
    EXPECT_EQ(take(), part);
  }
  std::string large;
  for (int i = 0; large.size() < 3 * kReadBlock + 5; ++i) large += std::to_string(i) + ",";
  send(large);
  std::string got;
  while (got.size() < large.size()) {
    read();
    run_until_done();
    ASSERT_FALSE(done->ec) << done->ec.message();
    EXPECT_LE(done->bytes, kReadBlock);
    got += take();
  }
  EXPECT_EQ(got, large);
}

TEST_F(BlockReadTest, TheEndOfTheStreamEndsTheRead) {
  read();
  testing_support::settle(io);
  peer.shutdown(tcp::socket::shutdown_send);
  run_until_done();
  EXPECT_EQ(done->ec, net::error::eof);
  EXPECT_EQ(done->bytes, 0u);
}

// A close sent right after the last bytes comes with them: the read that
// takes them takes the close too, and no edge follows for the next read.
// A look sees it, and a read `now` ends with it.
TEST_F(BlockReadTest, ACloseThatCameWithTheLastBytesIsSeenByALookAndAReadNow) {
  read();
  testing_support::settle(io);
  EXPECT_FALSE(socket.peer_closed_or_sent());
  send("last");
  peer.close();
  run_until_done();
  ASSERT_FALSE(done->ec) << done->ec.message();
  EXPECT_EQ(take(), "last");
  EXPECT_TRUE(socket.peer_closed_or_sent());
  read(true);
  run_until_done();
  EXPECT_EQ(done->ec, net::error::eof);
}

// What ends any read ends this one: the socket closed (a deadline, a client
// that left), cancel(), a cancellation slot. The buffer is left as it was.
TEST_F(BlockReadTest, CloseCancelAndACancellationSlotEndIt) {
  read();
  testing_support::settle(io);
  socket.cancel();
  run_until_done();
  EXPECT_EQ(done->ec, net::error::operation_aborted);

  net::cancellation_signal signal;
  read(net::bind_cancellation_slot(signal.slot(),
                                   [this](boost::system::error_code ec, std::size_t n) {
                                     done = ReadOutcome{ec, n};
                                   }));
  testing_support::settle(io);
  signal.emit(net::cancellation_type::terminal);
  run_until_done();
  EXPECT_EQ(done->ec, net::error::operation_aborted);

  read();
  testing_support::settle(io);
  socket.close();
  run_until_done();
  EXPECT_EQ(done->ec, net::error::operation_aborted);
  EXPECT_EQ(buffer.size(), 0u);

  read();  // on a closed socket: completes at once, with an error
  run_until_done();
  EXPECT_TRUE(done->ec);
}

}  // namespace
}  // namespace switchyard::http
