#include "gateway/profile_control.h"

#include <boost/asio.hpp>

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "openai/request_estimate.h"
#include "profiles/switch_policy.h"

namespace switchyard::gateway {

namespace net = boost::asio;
using net::awaitable;
using namespace std::chrono_literals;

namespace {

// What a request will cost (openai/request_estimate.h), a typical answer's
// 256 tokens when it names no limit.
profiles::WaitingJob estimate_job(const RequestContext& ctx) {
  const auto e = openai::estimate_tokens(ctx.facts, 256);
  return {static_cast<long>(e.prompt), static_cast<long>(e.output)};
}

}  // namespace

struct ProfileControl::Impl final : profiles::SwitchEnv {
  Impl(net::any_io_executor ex, const config::FleetConfig& config, fleet::Fleet& f, Router& r,
       WaitQueue& q, obs::GatewayMetrics& m, Clock c)
      : now(std::move(c)),
        executor(ex),
        options(config.switching),
        max_wait(config.queue.max_wait),
        fleet(f),
        router(r),
        queue(q),
        metrics(m),
        switcher(ex, config.profiles, config.switching, *this),
        policy(speeds(config), config.switching),
        tick(ex) {
    for (const auto& p : config.profiles)
      for (const auto& name : p.instances) in_profile.insert(name);
    for (const auto& c : config.instances)
      if (in_profile.count(c.name)) profile_models.insert(c.model);
    switcher.on_phase([this](profiles::SwitchPhase phase) {
      if (phase != profiles::SwitchPhase::draining) return;
      // Requests already waiting for these models now wait for the switch.
      for (const auto& model : switcher.held_models()) queue.extend(model, options.max_hold);
    });
    switcher.on_done([this](const profiles::SwitchRecord& r) {
      metrics.profile_switched(r.from, r.ok ? r.to : r.from, r.reason, r.seconds);
      policy.switched(r.from, r.to, r.seconds, r.ok, now());
      // The held requests go, in order, to what is routable now.
      std::set<std::string> models;
      for (const auto& inst : fleet.instances()) models.insert(inst->model());
      for (const auto& m : models) queue.dispatch(m);
    });
    if (options.mode == config::SwitchingOptions::Mode::on_demand)
      net::co_spawn(executor, watch(), net::detached);
  }
  ~Impl() override { tick.cancel(); }

  static std::vector<profiles::ProfileSpeed> speeds(const config::FleetConfig& config) {
    std::vector<profiles::ProfileSpeed> out;
    for (const auto& p : config.profiles) {
      profiles::ProfileSpeed speed{p.name, {}};
      for (const auto& name : p.instances) {
        profiles::InstanceSpeed inst{name, 1, {}};
        for (const auto& c : config.instances)
          if (c.name == name) inst.slots = c.slots.value_or(1);
        if (auto it = config.switching.estimates.find(name); it != config.switching.estimates.end())
          inst.estimate = it->second;
        speed.instances.push_back(inst);
      }
      if (!speed.known() && config.switching.mode == config::SwitchingOptions::Mode::on_demand)
        spdlog::warn(
            "profile {}: no switching.estimates (decode_tps, prefill_tps) for every instance; "
            "the on-demand policy does not switch to or from it until it has measured them",
            p.name);
      out.push_back(std::move(speed));
    }
    return out;
  }

  // SwitchEnv over the fleet and the slot ledger.
  std::optional<std::size_t> find(const std::string& name) const override {
    std::optional<std::size_t> found;
    for (const auto& inst : fleet.instances())
      if (inst->name() == name && inst->state != fleet::InstanceState::removed) found = inst->index;
    return found;
  }
  std::string name(std::size_t index) const override { return fleet.instances().at(index)->name(); }
  std::string model(std::size_t index) const override {
    return fleet.instances().at(index)->model();
  }
  int in_flight(std::size_t index) const override { return router.in_flight(index); }
  void set_cause(std::size_t index, fleet::AdminCause cause, bool on) override {
    fleet.set_cause(index, cause, on);
  }
  awaitable<std::optional<std::string>> bring_up(std::size_t index) override {
    return fleet.bring_up(index);
  }
  awaitable<void> bring_down(std::size_t index) override { return fleet.bring_down(index); }
  awaitable<std::optional<std::string>> warm(std::size_t index) override {
    return fleet.warm(index);
  }

  profiles::Demand demand() const {
    profiles::Demand d;
    std::vector<std::pair<std::uint64_t, profiles::WaitingJob>> in_order;
    for (const auto& [ctx, job] : waiting) in_order.push_back(job);
    std::sort(in_order.begin(), in_order.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [n, job] : in_order) d.waiting.push_back(job);
    for (const auto& inst : fleet.instances())
      if (in_profile.count(inst->name())) d.in_flight += router.in_flight(inst->index);
    return d;
  }

  // Asks the policy; starts the switch it wants.
  void consider() {
    if (switcher.switching()) return;
    auto decision = policy.decide(switcher.active(), demand(), now());
    if (!decision) return;
    decisions.push_back(policy.last_explanation());
    if (decisions.size() > 20) decisions.erase(decisions.begin());
    if (auto error = switcher.begin(decision->target, decision->reason))
      spdlog::warn("profile policy: switch to {} not started: {}", decision->target, *error);
  }

  // The policy's clock: sustained queues and idleness are noticed between
  // arrivals too.
  awaitable<void> watch() {
    for (;;) {
      tick.expires_after(500ms);
      auto [ec] = co_await tick.async_wait(net::as_tuple(net::use_awaitable));
      if (ec) co_return;
      consider();
    }
  }

  // Whether an instance of `model` is busy with a long prefill: a request
  // queued behind it waits for all of it.
  bool behind_long_prefill(const std::string& model) const {
    const auto at = now();
    for (const auto& inst : fleet.instances())
      if (inst->model() == model && policy.long_prefill(inst->name(), at)) return true;
    return false;
  }

  const Clock now;
  net::any_io_executor executor;
  const config::SwitchingOptions options;
  const std::chrono::milliseconds max_wait;  // queue.max_wait
  fleet::Fleet& fleet;
  Router& router;
  WaitQueue& queue;
  obs::GatewayMetrics& metrics;
  profiles::ProfileSwitch switcher;
  profiles::SwitchPolicy policy;
  net::steady_timer tick;
  std::set<std::string> in_profile;
  std::set<std::string, std::less<>> profile_models;  // models of the profiles' instances
  // Requests being routed, with their arrival number.
  std::map<const RequestContext*, std::pair<std::uint64_t, profiles::WaitingJob>> waiting;
  std::uint64_t arrivals = 0;
  std::vector<std::string> decisions;
};

ProfileControl::ProfileControl(net::any_io_executor executor, const config::FleetConfig& config,
                               fleet::Fleet& fleet, Router& router, WaitQueue& queue,
                               obs::GatewayMetrics& metrics, Clock now)
    : impl_(std::make_unique<Impl>(executor, config, fleet, router, queue, metrics,
                                   std::move(now))) {}

ProfileControl::~ProfileControl() = default;

profiles::ProfileSwitch& ProfileControl::switcher() {
  return impl_->switcher;
}

const config::SwitchingOptions& ProfileControl::options() const {
  return impl_->options;
}

std::optional<std::chrono::milliseconds> ProfileControl::hold(const RequestContext& ctx) {
  auto& g = *impl_;
  if (!g.profile_models.count(ctx.model)) return std::nullopt;
  g.waiting[&ctx] = {g.arrivals++, estimate_job(ctx)};
  if (g.options.mode == config::SwitchingOptions::Mode::on_demand) g.consider();
  if (g.switcher.switching() && g.switcher.held_models().count(ctx.model))
    return g.options.max_hold;
  // Behind a long prefill (most often the huge prompt a switch was made
  // for) a request waits longer than queue.max_wait through no fault of its
  // own: switching.max_hold bounds it instead.
  if (g.behind_long_prefill(ctx.model)) return g.options.max_hold;
  return std::nullopt;
}

void ProfileControl::routed(const RequestContext& ctx) {
  auto& g = *impl_;
  auto it = g.waiting.find(&ctx);
  if (it == g.waiting.end()) return;
  const profiles::WaitingJob job = it->second.second;
  g.waiting.erase(it);
  if (!ctx.target || !ctx.lease) return;
  // Long: longer than half of queue.max_wait, as a request behind it waits
  // for all of it and then for one of the slots it held.
  const auto& name = g.fleet.instances().at(*ctx.target)->name();
  if (!g.policy.started(name, job, g.now(), g.max_wait / 2)) return;
  spdlog::info(
      "profile: {} is busy with a {}-token prefill; requests for {} wait up to switching.max_hold",
      name, job.prompt_tokens, ctx.model);
  g.queue.extend(ctx.model, g.options.max_hold);
}

void ProfileControl::slot_released(std::size_t) {
  impl_->switcher.notify();
}

void ProfileControl::finished(const RequestContext& ctx) {
  const auto& r = ctx.record;
  if (!ctx.facts.stream || !r.usage || r.ttfb < 0 || r.instance.empty() ||
      r.outcome() != RequestRecord::Outcome::ok)
    return;
  profiles::RateSample sample;
  sample.prompt_tokens = r.usage->prompt_tokens;
  sample.cached_tokens = r.usage->cached_tokens;
  sample.first_token_seconds = r.ttfb - r.queued;
  sample.output_tokens = r.usage->completion_tokens;
  sample.decode_seconds = r.seconds_since_start() - r.ttfb;
  impl_->policy.measured(r.instance, sample);
}

std::vector<obs::ProfileStatus> ProfileControl::status() const {
  std::vector<obs::ProfileStatus> out;
  for (const auto& p : impl_->switcher.profiles())
    out.push_back({p.name, p.name == impl_->switcher.active()});
  return out;
}

const std::vector<std::string>& ProfileControl::decisions() const {
  return impl_->decisions;
}

}  // namespace switchyard::gateway
