// Asio's states of closed sockets are freed after a mark, and only those:
// a state closed after the mark may still be named by an event the loop
// has queued.
#include "http/descriptor_states.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <vector>

namespace switchyard::http {
namespace {

using boost::asio::ip::tcp;

// 600 sockets: more than two of the slab's 256-state chunks, and under the
// usual limit of 1,024 descriptors.
constexpr std::size_t kSockets = 600;

std::vector<tcp::socket> open_sockets(boost::asio::io_context& io) {
  std::vector<tcp::socket> sockets;
  for (std::size_t i = 0; i < kSockets; ++i) {
    sockets.emplace_back(io);
    sockets.back().open(tcp::v4());
  }
  return sockets;
}

TEST(DescriptorStates, ThoseOfSocketsClosedBeforeAMarkAreFreedAndTheirChunksGivenBack) {
  boost::asio::io_context io(1);
  // The chunks earlier tests' io_contexts left free go back first.
  reclaim_descriptor_states(io.get_executor(), mark_descriptor_states());
  const std::size_t before = descriptor_state_bytes();
  open_sockets(io);  // and closed again
  const std::size_t held = descriptor_state_bytes();
  ASSERT_GE(held, before + 2 * 256 * 168);  // sizeof(descriptor_state) with GCC 12

  EXPECT_GE(reclaim_descriptor_states(io.get_executor(), mark_descriptor_states()), kSockets);
  // Two whole chunks at least went back; the rest may share a chunk with a
  // state still in use elsewhere in the process.
  EXPECT_LE(descriptor_state_bytes(), held - 2 * 256 * 168);

  // The pool goes on handing out states.
  auto again = open_sockets(io);
  EXPECT_TRUE(again.back().is_open());
}

TEST(DescriptorStates, ThoseOfSocketsClosedAfterTheMarkAreKept) {
  boost::asio::io_context io(1);
  auto sockets = open_sockets(io);
  const auto mark = mark_descriptor_states();
  sockets.clear();
  const std::size_t held = descriptor_state_bytes();
  EXPECT_EQ(reclaim_descriptor_states(io.get_executor(), mark), 0u);
  EXPECT_EQ(descriptor_state_bytes(), held);
  // The next reclaim, marked after they closed, frees them.
  EXPECT_GE(reclaim_descriptor_states(io.get_executor(), mark_descriptor_states()), kSockets);
}

}  // namespace
}  // namespace switchyard::http
