#include "gateway/wait_queue.h"

#include <boost/asio.hpp>

#include <algorithm>

namespace switchyard::gateway {

namespace net = boost::asio;
using clock_type = std::chrono::steady_clock;

struct WaitQueue::Waiter {
  explicit Waiter(net::any_io_executor ex) : timer(ex) {}
  net::steady_timer timer;  // expires at the wait bound; cancelled to wake
  RouteQuery query;
  std::optional<RouteLease> lease;  // set by dispatch()
  bool shutting_down = false;
  bool rearmed = false;  // extend() moved the bound: wait again
};

WaitQueue::WaitQueue(net::any_io_executor executor, Router& router, fleet::QueueOptions options)
    : executor_(executor), router_(router), options_(options) {}

WaitQueue::~WaitQueue() = default;

int WaitQueue::depth(std::string_view model) const {
  auto it = waiting_.find(model);
  return it == waiting_.end() ? 0 : static_cast<int>(it->second.size());
}

net::awaitable<Admission> WaitQueue::acquire(RouteQuery query, bool retry,
                                             std::chrono::milliseconds max_wait) {
  Admission result;
  if (closed_) {
    result.outcome = Admission::Outcome::shutting_down;
    co_return result;
  }
  const std::string model(query.model);
  auto& line = waiting_[model];
  if (line.empty() || retry) {
    if (auto lease = router_.acquire(query)) {
      result.outcome = Admission::Outcome::granted;
      result.lease = std::move(*lease);
      co_return result;
    }
  }
  if (!retry && static_cast<int>(line.size()) >= options_.max_length) {
    result.outcome = Admission::Outcome::queue_full;
    co_return result;
  }
  const auto start = clock_type::now();
  auto waiter = std::make_shared<Waiter>(executor_);
  waiter->query = query;
  waiter->timer.expires_after(max_wait);
  if (retry)
    line.push_front(waiter);
  else
    line.push_back(waiter);
  auto [ec] = co_await waiter->timer.async_wait(net::as_tuple(net::use_awaitable));
  while (waiter->rearmed && !waiter->lease && !waiter->shutting_down &&
         (co_await net::this_coro::cancellation_state).cancelled() ==
             net::cancellation_type::none) {
    waiter->rearmed = false;
    std::tie(ec) = co_await waiter->timer.async_wait(net::as_tuple(net::use_awaitable));
  }
  // Woken by dispatch() (lease set), release_all(), the bound (no error), or
  // the caller's cancellation.
  auto& now_line = waiting_[model];
  std::erase(now_line, waiter);
  result.waited_seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  if (waiter->lease) {
    result.outcome = Admission::Outcome::granted;
    result.lease = std::move(*waiter->lease);
  } else if (waiter->shutting_down) {
    result.outcome = Admission::Outcome::shutting_down;
  } else {
    result.outcome = ec ? Admission::Outcome::cancelled : Admission::Outcome::timed_out;
  }
  co_return result;
}

void WaitQueue::dispatch(const std::string& model) {
  auto it = waiting_.find(model);
  if (it == waiting_.end()) return;
  for (auto& waiter : it->second) {
    if (waiter->lease || waiter->shutting_down) continue;  // already woken
    auto lease = router_.acquire(waiter->query);
    if (!lease) {
      if (waiter->query.tried.empty()) return;  // nothing free at all
      continue;  // only instances this one already failed on are free
    }
    waiter->lease = std::move(*lease);
    waiter->timer.cancel();
  }
}

void WaitQueue::extend(const std::string& model, std::chrono::milliseconds bound) {
  auto it = waiting_.find(model);
  if (it == waiting_.end()) return;
  const auto until = clock_type::now() + bound;
  for (auto& waiter : it->second) {
    if (waiter->lease || waiter->shutting_down || waiter->timer.expiry() >= until) continue;
    waiter->rearmed = true;
    waiter->timer.expires_at(until);  // ends the pending wait, which then waits again
  }
}

void WaitQueue::release_all() {
  closed_ = true;
  for (auto& [model, line] : waiting_) {
    for (auto& waiter : line) {
      if (waiter->lease) continue;
      waiter->shutting_down = true;
      waiter->timer.cancel();
    }
  }
}

}  // namespace switchyard::gateway
