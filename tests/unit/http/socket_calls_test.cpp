// read_now() and write_now() (http/beast_glue.h), which call the socket's
// system calls themselves (http/socket_calls.h): would-block is no error,
// and every other failure is reported, not taken for a full socket.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/socket_base.hpp>

#include <array>
#include <chrono>
#include <string>

#include "../io_support.h"
#include "http/beast_glue.h"

namespace switchyard::http {
namespace {

using namespace std::chrono_literals;

class SocketCallsTest : public ::testing::Test {
 protected:
  SocketCallsTest() { testing_support::connect_pair(io, socket, peer); }

  // Closes the peer with a reset (no orderly end).
  void reset_peer() {
    peer.set_option(net::socket_base::linger(true, 0));
    peer.close();
  }

  net::io_context io;
  tcp::socket socket{io};
  tcp::socket peer{io};
  boost::system::error_code ec;
};

TEST_F(SocketCallsTest, AWriteTakesWhatFitsAndAFullSocketIsNoError) {
  const std::string block(64 * 1024, 'x');
  const std::array<net::const_buffer, 2> pieces{net::buffer(block), net::buffer(block)};
  std::size_t sent = 0;
  // Loopback's buffers hold a few MiB at most: a write falls short well before 256.
  for (int i = 0; i < 256 && (sent = write_now(socket, pieces, ec)) == 2 * block.size(); ++i) {
  }
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_LT(sent, 2 * block.size()) << "the peer never read, yet every write went whole";
  EXPECT_EQ(write_now(socket, std::array<net::const_buffer, 0>{}, ec), 0u);
  EXPECT_FALSE(ec) << "nothing to write is no error";
}

TEST_F(SocketCallsTest, AWriteToAResetPeerFailsWithItsError) {
  reset_peer();
  const std::string bytes = "data: {}\n\n";
  std::size_t sent = 0;
  const auto give_up = std::chrono::steady_clock::now() + 2s;
  while (!ec && std::chrono::steady_clock::now() < give_up)
    sent = write_now(socket, std::array{net::buffer(bytes)}, ec);
  EXPECT_EQ(sent, 0u);
  EXPECT_TRUE(ec == net::error::connection_reset || ec == net::error::broken_pipe) << ec.message();
}

TEST_F(SocketCallsTest, AReadFindsNothingYetThenTheBytesThenTheEnd) {
  std::array<char, 16> into;
  EXPECT_EQ(read_now(socket, net::buffer(into), ec), 0u);
  EXPECT_FALSE(ec) << "nothing yet is no error";
  peer.write_some(net::buffer(std::string("ok")));
  peer.shutdown(tcp::socket::shutdown_send);
  std::size_t got = 0;
  const auto give_up = std::chrono::steady_clock::now() + 2s;
  while (got == 0 && std::chrono::steady_clock::now() < give_up)
    got = read_now(socket, net::buffer(into), ec);
  EXPECT_EQ(got, 2u);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(read_now(socket, net::buffer(into), ec), 0u);
  EXPECT_EQ(ec, net::error::eof);
}

TEST_F(SocketCallsTest, AReadFromAResetPeerFailsWithItsError) {
  reset_peer();
  std::array<char, 16> into;
  const auto give_up = std::chrono::steady_clock::now() + 2s;
  while (!ec && std::chrono::steady_clock::now() < give_up) read_now(socket, net::buffer(into), ec);
  EXPECT_EQ(ec, net::error::connection_reset) << ec.message();
}

}  // namespace
}  // namespace switchyard::http
