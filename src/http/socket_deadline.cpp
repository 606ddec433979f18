#include "http/socket_deadline.h"

#include <boost/asio/execution_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <optional>
#include <utility>
#include <vector>

namespace switchyard::http {

namespace net = boost::asio;
using Clock = std::chrono::steady_clock;

// An I/O context's queued deadlines: a binary heap by due time, each
// deadline knowing its position, and the one timer, waiting for the first.
class SocketDeadline::Queue : public net::execution_context::service {
 public:
  static inline net::execution_context::id id;

  explicit Queue(net::execution_context& context) : service(context) {}

  static Queue& of(const net::any_io_executor& executor) {
    auto& queue = net::use_service<Queue>(net::query(executor, net::execution::context));
    // Made here, not in the constructor, for want of an executor there.
    if (!queue.timer_) queue.timer_.emplace(executor);
    return queue;
  }

  // Queues `d` (again) for `at`, earlier than it is due now.
  void schedule(SocketDeadline& d, TimePoint at) {
    if (d.due_ == TimePoint::max()) {
      d.position_ = heap_.size();
      heap_.push_back(&d);
    }
    d.due_ = at;
    sift_up(d.position_);
    arm();
  }

  void remove(SocketDeadline& d) {
    if (d.due_ == TimePoint::max()) return;
    const std::size_t at = d.position_;
    d.due_ = TimePoint::max();
    SocketDeadline* last = heap_.back();
    heap_.pop_back();
    if (last == &d) return;
    place(last, at);
    sift_up(at);
    sift_down(last->position_);
  }

 private:
  // The context's services are shut down before any is destroyed, the
  // timer's before this one when it was made after it: drop the timer while
  // its service is whole. Deadlines destroyed later only leave the heap.
  void shutdown() override { timer_.reset(); }

  // Waits for the first deadline due, unless the timer wakes before it.
  // A queue that empties keeps its wait: it wakes once and finds nothing.
  void arm() {
    if (heap_.empty() || !timer_ || heap_.front()->due_ >= armed_for_) return;
    armed_for_ = heap_.front()->due_;
    timer_->expires_at(armed_for_);  // a wait replaced here ends with operation_aborted
    timer_->async_wait([this](const boost::system::error_code& ec) {
      if (!ec) fire();
    });
  }

  void fire() {
    armed_for_ = TimePoint::max();
    const auto now = Clock::now();
    while (!heap_.empty() && heap_.front()->due_ <= now) {
      SocketDeadline& d = *heap_.front();
      remove(d);
      if (d.deadline_ <= now) {
        d.deadline_ = TimePoint::max();
        d.expired_ = true;
        if (d.on_expiry_) d.on_expiry_();
      } else if (d.deadline_ != TimePoint::max()) {
        schedule(d, d.deadline_);  // moved on since it was queued
      }
    }
    arm();
  }

  void place(SocketDeadline* d, std::size_t at) {
    heap_[at] = d;
    d->position_ = at;
  }
  void sift_up(std::size_t at) {
    SocketDeadline* d = heap_[at];
    while (at > 0 && d->due_ < heap_[(at - 1) / 2]->due_) {
      place(heap_[(at - 1) / 2], at);
      at = (at - 1) / 2;
    }
    place(d, at);
  }
  void sift_down(std::size_t at) {
    SocketDeadline* d = heap_[at];
    for (;;) {
      std::size_t child = 2 * at + 1;
      if (child >= heap_.size()) break;
      if (child + 1 < heap_.size() && heap_[child + 1]->due_ < heap_[child]->due_) ++child;
      if (!(heap_[child]->due_ < d->due_)) break;
      place(heap_[child], at);
      at = child;
    }
    place(d, at);
  }

  std::vector<SocketDeadline*> heap_;
  std::optional<net::steady_timer> timer_;
  TimePoint armed_for_ = TimePoint::max();  // max: no wait pending
};

SocketDeadline::SocketDeadline(const net::any_io_executor& executor,
                               std::function<void()> on_expiry)
    : queue_(Queue::of(executor)), on_expiry_(std::move(on_expiry)) {}

SocketDeadline::~SocketDeadline() {
  queue_.remove(*this);
}

void SocketDeadline::expires_after(Clock::duration timeout, TimePoint now) {
  deadline_ = timeout >= TimePoint::max() - now ? TimePoint::max() : now + timeout;
  expired_ = false;
  if (deadline_ < due_) queue_.schedule(*this, deadline_);
}

void SocketDeadline::expires_never() {
  deadline_ = TimePoint::max();
}

}  // namespace switchyard::http
