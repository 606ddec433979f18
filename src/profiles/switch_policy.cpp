#include "profiles/switch_policy.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace switchyard::profiles {

namespace {

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

bool fits(const InstanceSpeed& inst, const WaitingJob& job) {
  const int context = inst.estimate.context;
  return context == 0 || job.prompt_tokens + job.output_tokens <= context;
}

double job_seconds(const InstanceSpeed& inst, const WaitingJob& job) {
  return prefill_seconds(inst.estimate, static_cast<double>(job.prompt_tokens)) +
         static_cast<double>(job.output_tokens) / inst.estimate.decode_tps;
}

}  // namespace

double prefill_seconds(const InstanceEstimate& e, double tokens) {
  const double h = e.prefill_half_depth;
  return (tokens + (h > 0 ? tokens * tokens / (2 * h) : 0)) / e.prefill_tps;
}

bool ProfileSpeed::known() const {
  return !instances.empty() &&
         std::all_of(instances.begin(), instances.end(), [](const InstanceSpeed& i) {
           return i.estimate.decode_tps > 0 && i.estimate.prefill_tps > 0;
         });
}

SwitchPolicy::SwitchPolicy(std::vector<ProfileSpeed> profiles, SwitchingOptions options)
    : profiles_(std::move(profiles)), options_(std::move(options)) {}

const ProfileSpeed* SwitchPolicy::find(const std::string& name) const {
  for (const auto& p : profiles_)
    if (p.name == name) return &p;
  return nullptr;
}

std::optional<double> SwitchPolicy::finish_seconds(const ProfileSpeed& profile,
                                                   const std::vector<WaitingJob>& jobs) const {
  // Each slot is a lane; jobs in arrival order go to the lane that finishes
  // them soonest (what the gateway's queue does), the makespan is the answer.
  struct Lane {
    const InstanceSpeed* inst;
    double free_at;
  };
  std::vector<Lane> lanes;
  for (const auto& inst : profile.instances)
    for (int s = 0; s < inst.slots; ++s) lanes.push_back({&inst, 0});
  double makespan = 0;
  for (const auto& job : jobs) {
    Lane* best = nullptr;
    double best_end = std::numeric_limits<double>::infinity();
    for (auto& lane : lanes) {
      if (!fits(*lane.inst, job)) continue;
      const double end = lane.free_at + job_seconds(*lane.inst, job);
      if (end < best_end) {
        best_end = end;
        best = &lane;
      }
    }
    if (!best) return std::nullopt;
    best->free_at = best_end;
    makespan = std::max(makespan, best_end);
  }
  return makespan;
}

double SwitchPolicy::switch_cost(const std::string& from, const std::string& to) const {
  if (auto it = measured_.find({from, to}); it != measured_.end()) return it->second;
  return seconds(options_.switch_cost);
}

void SwitchPolicy::switched(const std::string& from, const std::string& to, double cost, bool ok,
                            steady_time now) {
  last_switch_ = now;
  deep_since_.reset();
  idle_since_.reset();
  quiet_.clear();
  if (!ok || to == profiles_.front().name) needed_until_.reset();
  if (ok) measured_[{from, to}] = cost;
}

void SwitchPolicy::measured(const std::string& instance, const RateSample& sample) {
  // Weight of one sample against what was known: a handful of requests
  // outweigh the seed, one odd one does not.
  constexpr double kWeight = 0.2;
  // Fewer tokens than these time the engine's fixed costs, not its rate.
  constexpr long kMinPrefillTokens = 256;
  constexpr long kMinOutputTokens = 16;
  const auto blend = [](double& estimate, double rate) {
    estimate = estimate > 0 ? (1 - kWeight) * estimate + kWeight * rate : rate;
  };
  for (auto& p : profiles_)
    for (auto& inst : p.instances) {
      if (inst.name != instance) continue;
      auto& e = inst.estimate;
      const long fresh = sample.prompt_tokens - sample.cached_tokens;
      if (fresh >= kMinPrefillTokens && sample.first_token_seconds > 0) {
        // The work of tokens [cached, prompt) under the seed's slowdown with
        // depth, in depth-0 tokens: what prefill_tps is a rate of.
        const double h = e.prefill_half_depth;
        const auto depth = [h](double d) { return d + (h > 0 ? d * d / (2 * h) : 0); };
        blend(e.prefill_tps, (depth(static_cast<double>(sample.prompt_tokens)) -
                              depth(static_cast<double>(sample.cached_tokens))) /
                                 sample.first_token_seconds);
      }
      if (sample.output_tokens >= kMinOutputTokens && sample.decode_seconds > 0)
        blend(e.decode_tps, static_cast<double>(sample.output_tokens - 1) / sample.decode_seconds);
    }
}

bool SwitchPolicy::started(const std::string& instance, const WaitingJob& job, steady_time now,
                           std::chrono::milliseconds long_after) {
  for (const auto& p : profiles_)
    for (const auto& inst : p.instances) {
      if (inst.name != instance || inst.estimate.prefill_tps <= 0) continue;
      const double prefill = prefill_seconds(inst.estimate, static_cast<double>(job.prompt_tokens));
      if (prefill <= seconds(long_after)) return false;
      const auto end = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(prefill));
      auto& until = long_until_[instance];
      until = std::max(until, end);
      return true;
    }
  return false;
}

bool SwitchPolicy::long_prefill(const std::string& instance, steady_time now) const {
  auto it = long_until_.find(instance);
  return it != long_until_.end() && now < it->second;
}

std::optional<std::string> SwitchPolicy::huge_job(const ProfileSpeed& active,
                                                  const WaitingJob& job) const {
  bool fits_somewhere = false;
  double fastest = std::numeric_limits<double>::infinity();
  for (const auto& inst : active.instances) {
    if (!fits(inst, job)) continue;
    fits_somewhere = true;
    fastest =
        std::min(fastest, prefill_seconds(inst.estimate, static_cast<double>(job.prompt_tokens)));
  }
  if (!fits_somewhere)
    return fmt::format("a {}-token prompt does not fit a slot of {}", job.prompt_tokens,
                       active.name);
  if (fastest > seconds(options_.prefill_bound))
    return fmt::format("a {}-token prompt would prefill for {:.0f} s on {} (bound {:.0f} s)",
                       job.prompt_tokens, fastest, active.name, seconds(options_.prefill_bound));
  return std::nullopt;
}

std::optional<std::string> SwitchPolicy::huge_prompt(const ProfileSpeed& active,
                                                     const Demand& demand) const {
  for (const auto& job : demand.waiting)
    if (auto why = huge_job(active, job)) return why;
  return std::nullopt;
}

void SwitchPolicy::note_need(const ProfileSpeed& active, const Demand& demand, steady_time now) {
  // Once a waiting job leaves the queue the policy no longer sees it, so
  // each sighting projects its end here; the last sighting is nearly its start.
  const auto until = [&](const std::vector<WaitingJob>& jobs) {
    const auto work = finish_seconds(active, jobs);
    if (!work) return;
    const auto end = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(*work));
    needed_until_ = needed_until_ ? std::max(*needed_until_, end) : end;
  };
  const auto& daily = profiles_.front();
  for (const auto& job : demand.waiting)
    if (huge_job(daily, job)) until({job});
  if (static_cast<int>(demand.waiting.size()) >= options_.queue_depth) until(demand.waiting);
}

std::optional<Decision> SwitchPolicy::decide(const std::string& active, const Demand& demand,
                                             steady_time now) {
  const auto* current = find(active);
  if (!current || !current->known()) return std::nullopt;
  const bool idle = demand.waiting.empty() && demand.in_flight == 0;
  if (!idle)
    idle_since_.reset();
  else if (!idle_since_)
    idle_since_ = now;
  if (static_cast<int>(demand.waiting.size()) < options_.queue_depth)
    deep_since_.reset();
  else if (!deep_since_)
    deep_since_ = now;

  const bool daily = active == profiles_.front().name;
  if (!daily) note_need(*current, demand, now);

  std::string trigger, detail;
  if (auto why = huge_prompt(*current, demand)) {
    trigger = "huge_prompt";
    detail = *why;
  } else if (deep_since_ && now - *deep_since_ >= options_.sustain) {
    trigger = "queue";
    detail = fmt::format("{} queued for {:.0f} s (queue_depth {})", demand.waiting.size(),
                         seconds(now - *deep_since_), options_.queue_depth);
  } else if (!daily && idle_since_ && now - *idle_since_ >= options_.idle) {
    trigger = "idle";
    detail = fmt::format("nothing waiting or running on {} for {:.0f} s", active,
                         seconds(now - *idle_since_));
  } else if (!daily && needed_until_ && now - *needed_until_ >= options_.idle) {
    trigger = "idle";
    detail = fmt::format(
        "what {} was needed for (huge prompts, a deep queue) done by estimate {:.0f} s ago", active,
        seconds(now - *needed_until_));
  }
  if (trigger.empty()) {
    quiet_.clear();
    return std::nullopt;
  }
  const auto log_once = [&](std::string line) {
    const auto key = trigger + "/" + std::to_string(demand.waiting.size());
    if (quiet_ == key) return;
    quiet_ = key;
    explanation_ = std::move(line);
    spdlog::info("profile policy: {}", explanation_);
  };
  if (last_switch_ && now - *last_switch_ < options_.min_dwell) {
    log_once(fmt::format(
        "staying on {} ({}: {}): {:.0f} s since the last switch, min_dwell {:.0f} s", active,
        trigger, detail, seconds(now - *last_switch_), seconds(options_.min_dwell)));
    return std::nullopt;
  }
  if (trigger == "idle") {
    needed_until_.reset();
    explanation_ = fmt::format("switching back to {} (idle): {}", profiles_.front().name, detail);
    spdlog::info("profile policy: {}", explanation_);
    return Decision{profiles_.front().name, trigger};
  }

  const auto here = finish_seconds(*current, demand.waiting);
  const ProfileSpeed* best = nullptr;
  double best_total = std::numeric_limits<double>::infinity(), best_work = 0, best_cost = 0;
  for (const auto& p : profiles_) {
    if (p.name == active || !p.known()) continue;
    const auto work = finish_seconds(p, demand.waiting);
    if (!work) continue;
    const double cost = switch_cost(active, p.name);
    if (*work + cost < best_total) {
      best = &p;
      best_total = *work + cost;
      best_work = *work;
      best_cost = cost;
    }
  }
  const std::string on_here =
      here ? fmt::format("{:.0f} s on {}", *here, active) : fmt::format("does not fit {}", active);
  if (!best) {
    log_once(fmt::format("staying on {} ({}: {}): {} waiting, est. {}; no other profile fits",
                         active, trigger, detail, demand.waiting.size(), on_here));
    return std::nullopt;
  }
  const auto numbers =
      fmt::format("{} waiting, est. {} vs {:.0f} s + {:.0f} s switch on {}", demand.waiting.size(),
                  on_here, best_work, best_cost, best->name);
  if (here && *here <= best_total) {
    log_once(fmt::format("staying on {} ({}: {}): {}", active, trigger, detail, numbers));
    return std::nullopt;
  }
  explanation_ = fmt::format("switching to {} ({}: {}): {}", best->name, trigger, detail, numbers);
  spdlog::info("profile policy: {}", explanation_);
  // The waiting work is what the new profile is for, until it is done there.
  needed_until_ = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(best_total));
  return Decision{best->name, trigger};
}

}  // namespace switchyard::profiles
