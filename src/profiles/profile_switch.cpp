#include "profiles/profile_switch.h"
#include "http/use_tuple.h"

#include <boost/asio.hpp>

#include <algorithm>
#include <functional>
#include <memory>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace switchyard::profiles {

namespace net = boost::asio;
using net::awaitable;
using clock_type = std::chrono::steady_clock;
using http::use_tuple;

namespace {

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

using Outcome = std::optional<std::string>;  // nullopt, or why it failed

// Runs `step` on every index at once, as engines load and stop independently
// (one after the other would add up their times); completes when all have,
// with their outcomes in the order of `indices`.
awaitable<std::vector<Outcome>> all_at_once(net::any_io_executor executor,
                                            const std::vector<std::size_t>& indices,
                                            std::function<awaitable<Outcome>(std::size_t)> step) {
  struct Shared {
    std::vector<Outcome> outcomes;
    std::size_t left;
    net::steady_timer done;
  };
  auto shared = std::make_shared<Shared>(
      Shared{std::vector<Outcome>(indices.size()), indices.size(), net::steady_timer(executor)});
  for (std::size_t k = 0; k < indices.size(); ++k)
    net::co_spawn(
        executor,
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

}  // namespace

const char* to_string(SwitchPhase phase) {
  switch (phase) {
    case SwitchPhase::active:
      return "active";
    case SwitchPhase::draining:
      return "draining";
    case SwitchPhase::stopping:
      return "stopping";
    case SwitchPhase::starting:
      return "starting";
    case SwitchPhase::warming:
      return "warming";
    case SwitchPhase::rolling_back:
      return "rolling-back";
  }
  return "unknown";
}

ProfileSwitch::ProfileSwitch(net::any_io_executor executor, std::vector<ProfileConfig> profiles,
                             SwitchingOptions options, SwitchEnv& env)
    : executor_(executor),
      profiles_(std::move(profiles)),
      options_(std::move(options)),
      env_(env),
      active_(profiles_.at(0).name),
      wake_(executor) {}

ProfileSwitch::~ProfileSwitch() = default;

const ProfileConfig* ProfileSwitch::find(const std::string& name) const {
  for (const auto& p : profiles_)
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::size_t> ProfileSwitch::members(const ProfileConfig& p) const {
  std::vector<std::size_t> out;
  for (const auto& name : p.instances)
    if (auto i = env_.find(name)) out.push_back(*i);
  return out;
}

void ProfileSwitch::enter(SwitchPhase phase) {
  phase_ = phase;
  since_ = std::chrono::system_clock::now();
  if (phase != SwitchPhase::active)
    spdlog::info("profile switch {} -> {}: {}", active_, target_, to_string(phase));
  if (on_phase_) on_phase_(phase);
}

std::optional<std::string> ProfileSwitch::begin(const std::string& target,
                                                const std::string& reason) {
  const auto* to = find(target);
  if (!to) {
    std::string names;
    for (const auto& p : profiles_) names += (names.empty() ? "" : ", ") + p.name;
    return fmt::format("'{}' is not a profile (profiles: {})", target, names);
  }
  if (switching())
    return fmt::format("a switch from {} to {} is running ({})", active_, target_,
                       to_string(phase_));
  if (target == active_) return fmt::format("'{}' is already active", target);
  const auto old = members(*find(active_));
  const auto now = members(*to);
  std::vector<std::size_t> down, up;
  for (auto i : old)
    if (std::find(now.begin(), now.end(), i) == now.end()) down.push_back(i);
  for (auto i : now)
    if (std::find(old.begin(), old.end(), i) == old.end()) up.push_back(i);
  held_.clear();
  for (auto i : down) held_.insert(env_.model(i));
  for (auto i : up) held_.insert(env_.model(i));
  SwitchRecord record;
  record.from = active_;
  record.to = target;
  record.reason = reason;
  target_ = target;
  spdlog::info("profile switch {} -> {} ({}): {} instance(s) down, {} up", active_, target, reason,
               down.size(), up.size());
  // Synchronously, so that nothing is routed to them from here on.
  for (auto i : down) env_.set_cause(i, AdminCause::profile_draining, true);
  enter(SwitchPhase::draining);
  net::co_spawn(executor_, run(std::move(down), std::move(up), std::move(record)), net::detached);
  return std::nullopt;
}

awaitable<std::optional<SwitchRecord>> ProfileSwitch::wait_done() {
  net::steady_timer wait(executor_);
  while (switching()) {
    done_waits_.insert(&wait);
    wait.expires_after(std::chrono::hours(24));
    co_await wait.async_wait(use_tuple);
    done_waits_.erase(&wait);
  }
  co_return last_;
}

void ProfileSwitch::notify() {
  if (phase_ == SwitchPhase::draining) wake_.cancel();
}

awaitable<void> ProfileSwitch::drain(const std::vector<std::size_t>& down) {
  const auto deadline = clock_type::now() + options_.drain_timeout;
  bool warned = false;
  for (;;) {
    int left = 0;
    for (auto i : down) left += env_.in_flight(i);
    if (left == 0) co_return;
    if (clock_type::now() >= deadline) {
      if (options_.abort_on_drain_timeout) {
        spdlog::warn(
            "profile switch {} -> {}: {} request(s) still in flight after "
            "switching.drain_timeout; stopping their engines (on_drain_timeout: abort)",
            active_, target_, left);
        co_return;
      }
      if (!warned)
        spdlog::warn(
            "profile switch {} -> {}: {} request(s) still in flight after "
            "switching.drain_timeout; waiting on (on_drain_timeout: wait)",
            active_, target_, left);
      warned = true;
    }
    // Woken by notify() when a request ends; the bound catches a deadline.
    wake_.expires_at(clock_type::now() >= deadline ? clock_type::now() + std::chrono::seconds(1)
                                                   : deadline);
    co_await wake_.async_wait(use_tuple);
  }
}

awaitable<void> ProfileSwitch::run(std::vector<std::size_t> down, std::vector<std::size_t> up,
                                   SwitchRecord record) {
  const auto start = clock_type::now();
  auto step = start;
  co_await drain(down);
  record.drain_seconds = seconds_since(step);

  enter(SwitchPhase::stopping);
  step = clock_type::now();
  const auto bring_down = [this](std::size_t i) -> awaitable<Outcome> {
    env_.set_cause(i, AdminCause::profile_parked, true);
    env_.set_cause(i, AdminCause::profile_draining, false);
    co_await env_.bring_down(i);
    co_return std::nullopt;
  };
  const auto bring_up = [this](std::size_t i) { return env_.bring_up(i); };
  co_await all_at_once(executor_, down, bring_down);
  record.stop_seconds = seconds_since(step);

  enter(SwitchPhase::starting);
  step = clock_type::now();
  std::optional<std::string> failed;
  const auto started = co_await all_at_once(executor_, up, bring_up);
  for (std::size_t k = 0; k < up.size() && !failed; ++k)
    if (started[k])
      failed = fmt::format("instance {} did not start: {}", env_.name(up[k]), *started[k]);
  record.start_seconds = seconds_since(step);
  if (!failed) {
    enter(SwitchPhase::warming);
    step = clock_type::now();
    for (auto i : up) {
      if (auto why = co_await env_.warm(i)) {
        failed = fmt::format("instance {} failed its warm-up: {}", env_.name(i), *why);
        break;
      }
    }
    record.warm_seconds = seconds_since(step);
  }

  if (failed) {
    record.error = *failed;
    spdlog::error("profile switch {} -> {} failed: {}; rolling back to {}", record.from, record.to,
                  *failed, record.from);
    enter(SwitchPhase::rolling_back);
    co_await all_at_once(executor_, up, bring_down);
    const auto back = co_await all_at_once(executor_, down, bring_up);
    for (std::size_t k = 0; k < down.size(); ++k) {
      if (back[k]) {
        spdlog::error("profile switch rollback: instance {} did not come back: {}",
                      env_.name(down[k]), *back[k]);
        continue;
      }
      env_.set_cause(down[k], AdminCause::profile_parked, false);
    }
  } else {
    for (auto i : up) env_.set_cause(i, AdminCause::profile_parked, false);
    active_ = record.to;
    record.ok = true;
  }
  record.seconds = seconds_since(start);
  if (record.ok)
    spdlog::info(
        "profile switch {} -> {} done in {:.2f} s (drain {:.2f}, stop {:.2f}, start {:.2f}, "
        "warm {:.2f})",
        record.from, record.to, record.seconds, record.drain_seconds, record.stop_seconds,
        record.start_seconds, record.warm_seconds);
  target_.clear();
  held_.clear();
  last_ = record;
  enter(SwitchPhase::active);
  if (on_done_) on_done_(record);
  for (auto* w : done_waits_) w->cancel();
}

}  // namespace switchyard::profiles
