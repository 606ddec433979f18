// Driving a WaitQueue from a test: a queued request is a coroutine on the
// test's io_context, run until nothing more is ready.
#pragma once

#include <boost/asio.hpp>

#include <chrono>
#include <utility>

#include "gateway/wait_queue.h"

namespace switchyard::gateway::testing_support {

// Runs what is ready on `io`, and returns.
inline void run_ready(boost::asio::io_context& io) {
  io.restart();
  io.poll();
}

// Queues `query` on `queue` and runs what is ready; `granted(lease)` is
// called when it gets a slot (a refusal or a timeout calls nothing). The
// query's views must outlive the wait.
template <class Granted>
void submit(boost::asio::io_context& io, WaitQueue& queue, RouteQuery query, QueueShare share,
            std::chrono::milliseconds max_wait, Granted granted) {
  boost::asio::co_spawn(
      io,
      [&queue, query, share, max_wait, granted]() -> boost::asio::awaitable<void> {
        Admission a = co_await queue.acquire(query, false, max_wait, share);
        if (a.outcome == Admission::Outcome::granted) granted(std::move(a.lease));
      },
      boost::asio::detached);
  run_ready(io);
}

}  // namespace switchyard::gateway::testing_support
