#include "profiles/transition.h"

#include <boost/asio.hpp>

#include <algorithm>
#include <memory>

#include <spdlog/spdlog.h>

#include "common/scoped_member.h"
#include "http/use_tuple.h"

namespace switchyard::profiles {

namespace net = boost::asio;
using net::awaitable;
using clock_type = std::chrono::steady_clock;
using http::use_tuple;

Transition::Transition(net::any_io_executor executor, InstanceControl& control,
                       TransitionCauses causes)
    : executor_(executor),
      control_(control),
      causes_(causes),
      waits_(std::make_shared<std::set<net::steady_timer*>>()) {}

Transition::~Transition() = default;

void Transition::notify() {
  for (auto* wait : *waits_) wait->cancel();
}

awaitable<bool> Transition::drain(std::vector<std::size_t> indices,
                                  config::SwitchingOptions options, std::string what,
                                  std::function<bool()> cancelled) {
  const auto deadline = clock_type::now() + options.drain_timeout;
  net::steady_timer wait(executor_);
  const auto waits = waits_;
  const ScopedMember registered(*waits, &wait);
  bool warned = false;
  for (;;) {
    if (cancelled && cancelled()) co_return false;
    int left = 0;
    for (auto i : indices) left += control_.in_flight(i);
    if (left == 0) co_return true;
    const auto now = clock_type::now();
    if (now >= deadline) {
      if (options.abort_on_drain_timeout) {
        spdlog::warn(
            "{}: {} request(s) still in flight after switching.drain_timeout; stopping their "
            "engines (on_drain_timeout: abort)",
            what, left);
        co_return true;
      }
      if (!warned)
        spdlog::warn(
            "{}: {} request(s) still in flight after switching.drain_timeout; waiting on "
            "(on_drain_timeout: wait)",
            what, left);
      warned = true;
    }
    // Woken by notify() when a request ends; the second is a bound.
    wait.expires_at(now >= deadline ? now + std::chrono::seconds(1)
                                    : std::min(deadline, now + std::chrono::seconds(1)));
    co_await wait.async_wait(use_tuple);
  }
}

awaitable<void> Transition::stop(std::vector<std::size_t> indices) {
  // Named, not temporaries in co_await (GCC 12 destroys those twice).
  std::function<awaitable<Outcome>(std::size_t)> park =
      [this](std::size_t i) -> awaitable<Outcome> {
    control_.set_cause(i, causes_.parked, true);
    control_.set_cause(i, causes_.draining, false);
    co_await control_.bring_down(i);
    co_return std::nullopt;
  };
  co_await all_at_once(indices, park);
}

awaitable<std::vector<Outcome>> Transition::start(std::vector<std::size_t> indices) {
  std::function<awaitable<Outcome>(std::size_t)> up = [this](std::size_t i) {
    return control_.bring_up(i);
  };
  co_return co_await all_at_once(indices, up);
}

// Runs `step` on every index at once, as engines load and stop independently
// (one after the other would add up their times).
awaitable<std::vector<Outcome>> Transition::all_at_once(
    const std::vector<std::size_t>& indices, std::function<awaitable<Outcome>(std::size_t)> step) {
  struct Shared {
    std::vector<Outcome> outcomes;
    std::size_t left;
    net::steady_timer done;
  };
  auto shared = std::make_shared<Shared>(
      Shared{std::vector<Outcome>(indices.size()), indices.size(), net::steady_timer(executor_)});
  for (std::size_t k = 0; k < indices.size(); ++k)
    net::co_spawn(
        executor_,
        [shared, step, k, index = indices[k]]() -> awaitable<void> {
          shared->outcomes[k] = co_await step(index);
          if (--shared->left == 0) shared->done.cancel();
        },
        net::detached);
  while (shared->left > 0) {
    shared->done.expires_after(std::chrono::hours(24));
    co_await shared->done.async_wait(use_tuple);
  }
  co_return std::move(shared->outcomes);
}

}  // namespace switchyard::profiles
