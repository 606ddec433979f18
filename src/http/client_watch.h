// Noticing a client that closes or resets its connection while its request
// is being handled, so that the work done for it can stop (an upstream call
// aborted, an engine slot freed).
//
// Watching costs a system call per request, and on the gateway's path that
// was ≈ 5 % of its CPU per request (docs/performance.md), while nearly every
// request is answered before its client could usefully leave. So a watch is
// armed only once its request has lasted one to two ticks of a timer shared
// by the server; a client that left before then is noticed at that moment,
// when the first look at its socket finds the connection ended.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <functional>
#include <memory>

namespace switchyard::http {

// One watch, stopped when the handle is reset or destroyed.
class ClientWatch {
 public:
  struct State;
  ClientWatch() = default;
  explicit ClientWatch(std::shared_ptr<State> state) : state_(std::move(state)) {}
  ClientWatch(ClientWatch&&) = default;
  ClientWatch& operator=(ClientWatch&& other) noexcept;
  ~ClientWatch() { reset(); }

  // Stops watching: on_gone will not be called after this.
  void reset();

 private:
  std::shared_ptr<State> state_;
};

class ClientWatches {
 public:
  ClientWatches(boost::asio::any_io_executor executor, std::chrono::milliseconds tick);
  ~ClientWatches();
  ClientWatches(const ClientWatches&) = delete;
  ClientWatches& operator=(const ClientWatches&) = delete;

  // Calls `on_gone` once, on the executor, if the client of `socket` closes
  // or resets the connection while the returned watch lives; noticed within
  // two ticks of the call, and at once after that. The socket must outlive
  // the watch. Data from the client (a pipelined request) ends the watch:
  // that client is still there.
  ClientWatch watch(boost::asio::ip::tcp::socket& socket, std::function<void()> on_gone);

 private:
  struct Ticker;
  std::shared_ptr<Ticker> ticker_;
};

// Completes with true as soon as the client of `socket` closes or resets
// the connection. While it stays connected this waits until cancelled (the
// awaitable operators' `||` cancel it when the work it guards ends first),
// and then completes with false.
boost::asio::awaitable<bool> until_client_leaves(boost::asio::ip::tcp::socket& socket);

}  // namespace switchyard::http
