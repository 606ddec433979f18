#include "fleet/profile_switch.h"

#include <boost/asio.hpp>

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace switchyard::fleet {

namespace net = boost::asio;
using net::awaitable;
using clock_type = std::chrono::steady_clock;
constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

namespace {

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
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
  for (auto i : down) env_.set_admin(i, AdminState::draining);
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
  for (auto i : down) co_await env_.bring_down(i);
  record.stop_seconds = seconds_since(step);

  enter(SwitchPhase::starting);
  step = clock_type::now();
  std::optional<std::string> failed;
  std::size_t brought = 0;  // how many of `up` were brought up (or tried)
  for (auto i : up) {
    ++brought;
    if (auto why = co_await env_.bring_up(i)) {
      failed = fmt::format("instance {} did not start: {}", env_.name(i), *why);
      break;
    }
  }
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
    for (std::size_t k = 0; k < brought; ++k) co_await env_.bring_down(up[k]);
    for (auto i : down) {
      if (auto why = co_await env_.bring_up(i)) {
        spdlog::error("profile switch rollback: instance {} did not come back: {}", env_.name(i),
                      *why);
        continue;
      }
      env_.set_admin(i, AdminState::active);
    }
  } else {
    for (auto i : up) env_.set_admin(i, AdminState::active);
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

}  // namespace switchyard::fleet
