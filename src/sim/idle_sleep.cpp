#include "sim/idle_sleep.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>

#include <spdlog/spdlog.h>

namespace switchyard::sim {

namespace net = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace {

clock_type::duration seconds(double s) {
  return std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(s));
}

}  // namespace

struct IdleSleep::State : std::enable_shared_from_this<IdleSleep::State> {
  State(net::any_io_executor ex, double idle, double load, Hooks h)
      : idle_timer(ex), idle_seconds(idle), load_seconds(load), hooks(std::move(h)) {}

  void count_idle(clock_type::duration from_now) {
    idle_timer.expires_after(from_now);
    idle_timer.async_wait([self = weak_from_this()](boost::system::error_code ec) {
      auto s = self.lock();
      if (ec || !s || s->in_use > 0 || s->asleep) return;
      spdlog::info("sim: server is entering sleeping state");
      s->asleep = true;
      if (s->hooks.slept) s->hooks.slept();
    });
  }

  net::steady_timer idle_timer;
  const double idle_seconds;
  const double load_seconds;
  Hooks hooks;
  int in_use = 0;
  bool asleep = false;
  bool waking = false;
  clock_type::time_point awake_at;  // while waking
};

IdleSleep::IdleSleep(net::any_io_executor executor, double idle_seconds, double load_seconds,
                     Hooks hooks)
    : state_(std::make_shared<State>(executor, idle_seconds, load_seconds, std::move(hooks))) {
  state_->count_idle(seconds(load_seconds + idle_seconds));
}

IdleSleep::~IdleSleep() {
  state_->idle_timer.cancel();
}

bool IdleSleep::asleep() const {
  return state_->asleep;
}

IdleSleep::Use::Use(std::shared_ptr<State> state) : state_(std::move(state)) {
  ++state_->in_use;
  state_->idle_timer.cancel();
}

IdleSleep::Use::~Use() {
  if (state_ && --state_->in_use == 0) state_->count_idle(seconds(state_->idle_seconds));
}

net::awaitable<IdleSleep::Use> IdleSleep::use() {
  Use held(state_);  // released if the wait is abandoned
  auto& s = *state_;
  if (!s.asleep) co_return held;
  if (!s.waking) {
    spdlog::info("sim: server is exiting sleeping state");
    s.waking = true;
    s.awake_at = clock_type::now() + seconds(s.load_seconds);
    if (s.hooks.waking) s.hooks.waking(s.load_seconds);
  }
  net::steady_timer wait(s.idle_timer.get_executor());
  wait.expires_at(s.awake_at);
  co_await wait.async_wait(net::as_tuple(net::use_awaitable));
  s.asleep = false;
  s.waking = false;
  co_return held;
}

}  // namespace switchyard::sim
