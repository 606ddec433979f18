// A deadline for the operation in progress on one socket, at the cost of a
// clock read per operation. Beast's tcp_stream arms and cancels a timer for
// every read and write, and each cancelled wait is one more trip through the
// event loop; on the gateway's path that was a visible share of the cost per
// request. Here one timer per socket sleeps until the earliest moment the
// deadline could pass and, when it wakes early, sleeps again until the
// current deadline: a socket busy with short operations never touches it.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <functional>
#include <memory>

namespace switchyard::http {

class SocketDeadline {
 public:
  // `on_expiry` runs on `executor` when a deadline passes, typically to
  // cancel or close the socket so that its pending operation fails.
  SocketDeadline(boost::asio::any_io_executor executor, std::function<void()> on_expiry);
  ~SocketDeadline();
  SocketDeadline(const SocketDeadline&) = delete;
  SocketDeadline& operator=(const SocketDeadline&) = delete;

  // Call before starting an operation ...
  void expires_after(std::chrono::steady_clock::duration timeout);
  // ... and when it completes, so that time spent between operations counts
  // against nothing.
  void expires_never();
  // Whether the deadline passed since the last expires_after().
  bool expired() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace switchyard::http
