// A deadline for the operation in progress on one socket, at the cost of a
// clock read per operation. Beast's tcp_stream arms and cancels a timer for
// every read and write, and each cancelled wait is one more trip through the
// event loop; on the gateway's path that was a visible share of the cost per
// request. Here the deadlines of one I/O context share one timer, which
// sleeps until the earliest moment one of them could pass; a deadline found
// moved on when its moment comes waits on for its current one. A socket busy
// with short operations never touches the timer, and an idle one holds no
// timer and no pending wait of its own (some 380 bytes each, two an open
// stream: docs/reliability.md, "Idle streams").
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstddef>
#include <functional>

namespace switchyard::http {

class SocketDeadline {
 public:
  // `on_expiry` runs on `executor` when a deadline passes, typically to
  // cancel or close the socket so that its pending operation fails. The
  // deadlines of one context must be used from one thread at a time, and
  // destroyed before the context.
  SocketDeadline(const boost::asio::any_io_executor& executor, std::function<void()> on_expiry);
  ~SocketDeadline();
  SocketDeadline(const SocketDeadline&) = delete;
  SocketDeadline& operator=(const SocketDeadline&) = delete;

  // Call before starting an operation ...
  void expires_after(std::chrono::steady_clock::duration timeout) {
    expires_after(timeout, std::chrono::steady_clock::now());
  }
  // ... with the clock read once for the deadlines of one operation.
  void expires_after(std::chrono::steady_clock::duration timeout,
                     std::chrono::steady_clock::time_point now);
  // ... and when it completes, so that time spent between operations counts
  // against nothing.
  void expires_never();
  // Whether the deadline passed since the last expires_after().
  bool expired() const { return expired_; }

 private:
  using TimePoint = std::chrono::steady_clock::time_point;
  class Queue;  // the context's deadlines, by when they are due

  Queue& queue_;
  std::function<void()> on_expiry_;
  TimePoint deadline_ = TimePoint::max();
  TimePoint due_ = TimePoint::max();  // when the queue looks at it next; max: not queued
  std::size_t position_ = 0;          // in the queue, while queued
  bool expired_ = false;
};

}  // namespace switchyard::http
