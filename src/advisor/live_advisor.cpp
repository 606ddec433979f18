#include "advisor/live_advisor.h"

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

#include "advisor/backend_checks.h"

namespace switchyard::advisor {

namespace {

// What doctor says about its own two-scrape window rather than the engine:
// the gateway measures generation from what it streams, and an idle engine
// is no finding.
bool about_the_window(const std::string& check) {
  return check == "backend.generation" || check == "backend.idle";
}

}  // namespace

void LiveAdvisor::observe(const std::string& instance, const std::string& metrics,
                          clock::time_point at, std::optional<clock::time_point> idle_at) {
  auto it = last_.find(instance);
  if (it == last_.end()) {
    last_.emplace(instance, Window{metrics, at, {}});
    return;
  }
  const auto from = idle_at ? std::max(*idle_at, it->second.at) : it->second.at;
  BackendObservation obs;
  obs.url = instance;
  obs.first.metrics = std::move(it->second.metrics);
  obs.second.metrics = metrics;
  obs.window_seconds = std::chrono::duration<double>(at - from).count();
  const BackendReport report = analyze_backend(obs);
  std::vector<Finding> found;
  for (const auto& f : report.findings)
    if (!about_the_window(f.check)) found.push_back(f);
  replace_findings(instance, std::move(found));
  it->second.metrics = metrics;
  it->second.at = at;
  it->second.measurements.clear();
  for (const auto& m : report.measurements) it->second.measurements[m.name] = m.value;
}

void LiveAdvisor::forget(const std::string& instance) {
  last_.erase(instance);
  replace_findings(instance, {});
}

void LiveAdvisor::replace_findings(const std::string& instance, std::vector<Finding> now) {
  std::set<std::string> checks;
  for (auto& f : now) {
    f.subject = instance;
    checks.insert(f.check);
    const auto key = std::pair{instance, f.check};
    auto it = active_.find(key);
    if (it == active_.end()) {
      if (f.severity == Severity::warning)
        spdlog::warn("advisor: instance {}: {} ({}): {}", instance, f.check, to_string(f.severity),
                     f.message);
      else
        spdlog::info("advisor: instance {}: {} ({}): {}", instance, f.check, to_string(f.severity),
                     f.message);
      active_.emplace(key, std::move(f));
    } else {
      // Still in force: its wording follows the latest window, not logged again.
      it->second = std::move(f);
    }
  }
  for (auto it = active_.lower_bound({instance, ""});
       it != active_.end() && it->first.first == instance;) {
    if (checks.count(it->first.second)) {
      ++it;
      continue;
    }
    spdlog::info("advisor: instance {}: {} cleared", instance, it->first.second);
    it = active_.erase(it);
  }
}

std::vector<InstanceFinding> LiveAdvisor::findings() const {
  std::vector<InstanceFinding> out;
  for (const auto& [key, f] : active_) out.push_back({key.first, f});
  return out;
}

std::optional<double> LiveAdvisor::measurement(const std::string& instance,
                                               const std::string& name) const {
  const auto it = last_.find(instance);
  if (it == last_.end()) return std::nullopt;
  const auto m = it->second.measurements.find(name);
  if (m == it->second.measurements.end()) return std::nullopt;
  return m->second;
}

}  // namespace switchyard::advisor
