#include "profiles/profile_switch.h"
#include "http/use_tuple.h"

#include <boost/asio.hpp>

#include <algorithm>
#include <functional>

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
      steps_(executor, env, {AdminCause::profile_draining, AdminCause::profile_parked}) {}

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
  steps_.notify();
}

awaitable<void> ProfileSwitch::run(std::vector<std::size_t> down, std::vector<std::size_t> up,
                                   SwitchRecord record) {
  const auto start = clock_type::now();
  auto step = start;
  const auto what = fmt::format("profile switch {} -> {}", active_, target_);
  co_await steps_.drain(down, options_, what);
  record.drain_seconds = seconds_since(step);

  enter(SwitchPhase::stopping);
  step = clock_type::now();
  co_await steps_.stop(down);
  record.stop_seconds = seconds_since(step);

  enter(SwitchPhase::starting);
  step = clock_type::now();
  std::optional<std::string> failed;
  const auto started = co_await steps_.start(up);
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
    co_await steps_.stop(up);
    const auto back = co_await steps_.start(down);
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
