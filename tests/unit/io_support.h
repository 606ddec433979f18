// Driving an io_context in tests by conditions, never by fixed sleeps.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>

namespace switchyard::testing_support {

// Runs what is ready now, and what that makes ready, without waiting for
// any timer: a hand-off that is posted, not timed, has happened after it.
inline void settle(boost::asio::io_context& io) {
  io.restart();
  io.poll();
}

// Runs until `done` (a timer or a peer has to come first), for at most
// `limit`; the test's assertions then say what did not happen.
template <class Done>
void run_until(boost::asio::io_context& io, Done done,
               std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  io.restart();
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < end) {
    io.run_one_for(std::chrono::milliseconds(10));
    if (io.stopped()) io.restart();
  }
}

// Connects `a` to `b` over loopback, on a free port.
inline void connect_pair(boost::asio::io_context& io, boost::asio::ip::tcp::socket& a,
                         boost::asio::ip::tcp::socket& b) {
  using boost::asio::ip::tcp;
  tcp::acceptor acceptor(io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  a.connect(acceptor.local_endpoint());
  acceptor.accept(b);
}

}  // namespace switchyard::testing_support
