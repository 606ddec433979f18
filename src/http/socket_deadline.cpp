#include "http/socket_deadline.h"

#include <boost/asio/steady_timer.hpp>

namespace switchyard::http {

namespace net = boost::asio;
using Clock = std::chrono::steady_clock;

struct SocketDeadline::State : std::enable_shared_from_this<State> {
  State(net::any_io_executor executor, std::function<void()> f)
      : timer(executor), on_expiry(std::move(f)) {}

  void arm(Clock::time_point at) {
    wake = at;
    ++generation;  // a wait replaced here may have completed already: ignore it then
    timer.expires_at(at);
    timer.async_wait(
        [self = shared_from_this(), gen = generation](const boost::system::error_code& ec) {
          if (!ec && gen == self->generation) self->woke();
        });
  }

  void woke() {
    wake = Clock::time_point::max();
    if (deadline == Clock::time_point::max()) return;  // nothing pending any more
    if (Clock::now() < deadline) {
      arm(deadline);  // the deadline moved on since the timer was set
      return;
    }
    deadline = Clock::time_point::max();
    expired = true;
    if (on_expiry) on_expiry();
  }

  net::steady_timer timer;
  std::function<void()> on_expiry;
  Clock::time_point deadline = Clock::time_point::max();
  Clock::time_point wake = Clock::time_point::max();  // when the timer fires; max: idle
  unsigned long generation = 0;
  bool expired = false;
};

SocketDeadline::SocketDeadline(net::any_io_executor executor, std::function<void()> on_expiry)
    : state_(std::make_shared<State>(std::move(executor), std::move(on_expiry))) {}

SocketDeadline::~SocketDeadline() {
  // A wait still pending holds the state: make it a no-op.
  state_->on_expiry = nullptr;
  state_->deadline = Clock::time_point::max();
  state_->timer.cancel();
}

void SocketDeadline::expires_after(Clock::duration timeout) {
  auto& s = *state_;
  const auto now = Clock::now();
  s.deadline = timeout >= Clock::time_point::max() - now ? Clock::time_point::max() : now + timeout;
  s.expired = false;
  if (s.deadline < s.wake) s.arm(s.deadline);
}

void SocketDeadline::expires_never() {
  state_->deadline = Clock::time_point::max();
}

bool SocketDeadline::expired() const {
  return state_->expired;
}

}  // namespace switchyard::http
