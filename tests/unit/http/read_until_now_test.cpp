#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <chrono>
#include <string>
#include <string_view>

#include "../io_support.h"
#include "http/beast_glue.h"
#include "http/parsers.h"

namespace switchyard::http {
namespace {

using namespace std::chrono_literals;

// read_until_now() on a loopback connection whose other end is written by
// the test: what it reads at once, and when it leaves the rest to
// read_until().
class ReadUntilNowTest : public ::testing::Test {
 protected:
  ReadUntilNowTest() { testing_support::connect_pair(io, socket, peer); }

  // Writes `bytes` from the peer and waits (bounded) until they can be read.
  void send(std::string_view bytes) {
    net::write(peer, net::buffer(bytes));
    const auto give_up = std::chrono::steady_clock::now() + 2s;
    while (socket.available() < bytes.size() && std::chrono::steady_clock::now() < give_up) {
    }
    ASSERT_GE(socket.available(), bytes.size());
  }

  bool read(bool arrived) {
    return read_until_now(socket, buffer, parser, ReadUntil::header, arrived, ec);
  }

  net::io_context io;
  tcp::socket socket{io};
  tcp::socket peer{io};
  beast::flat_buffer buffer;
  ResponseParser parser;
  boost::system::error_code ec;
};

TEST_F(ReadUntilNowTest, ReadsAHeadThatHasArrivedAndLeavesTheRestToTheAwait) {
  EXPECT_FALSE(read(true)) << "nothing there yet: read_until() waits for it";
  EXPECT_FALSE(ec);
  send("HTTP/1.1 200 OK\r\nContent-Le");
  EXPECT_FALSE(read(false)) << "not told it arrived: the socket is not read";
  EXPECT_EQ(buffer.size(), 0u);
  EXPECT_FALSE(read(true)) << "half a head: the rest is awaited";
  EXPECT_FALSE(ec);
  EXPECT_FALSE(parser.is_header_done());
  send("ngth: 2\r\n\r\nok");
  EXPECT_TRUE(read(true));
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_TRUE(parser.is_header_done());
  EXPECT_EQ(parser.status(), 200);
  EXPECT_EQ(std::string_view(static_cast<const char*>(buffer.data().data()), buffer.size()), "ok")
      << "the body stays in the buffer";
}

TEST_F(ReadUntilNowTest, AHeadCutOffByTheCloseIsSettledAsAFailure) {
  send("HTTP/1.1 200 OK\r\nContent-Le");
  EXPECT_FALSE(read(true));
  peer.close();
  const auto give_up = std::chrono::steady_clock::now() + 2s;
  while (!read(true) && std::chrono::steady_clock::now() < give_up) {
  }
  EXPECT_EQ(ec, beast_http::error::partial_message) << ec.message();
}

}  // namespace
}  // namespace switchyard::http
