// doctor's backend checks, always on: each new scrape of an instance's
// /metrics is checked against the one before it (analyze_backend over that
// window), and the findings in force are kept by (instance, check), each
// logged once when it starts and once when it stops.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "advisor/finding.h"

namespace switchyard::advisor {

struct InstanceFinding {
  std::string instance;
  Finding finding;  // its subject is the instance name
};

// Used from the gateway's one I/O thread (not locked).
class LiveAdvisor {
 public:
  using clock = std::chrono::steady_clock;

  // A new /metrics text of `instance`, scraped at `at`. The first scrape of
  // an instance only starts its window. With `idle_at`, the engine's figures
  // were still the last scrape's then: the window starts there, and a rate
  // is not diluted by the idle time before it.
  void observe(const std::string& instance, const std::string& metrics, clock::time_point at,
               std::optional<clock::time_point> idle_at = std::nullopt);
  // The instance's series are gone (not ready, or its /metrics stopped
  // answering): its findings stop and its window restarts.
  void forget(const std::string& instance);

  // The findings in force, by instance then check.
  std::vector<InstanceFinding> findings() const;
  // What the last window measured of `instance` (advisor measurement names,
  // e.g. "prefix_cache_hit_rate"); nullopt when not measured.
  std::optional<double> measurement(const std::string& instance, const std::string& name) const;

 private:
  struct Window {
    std::string metrics;
    clock::time_point at;
    std::map<std::string, double> measurements;
  };
  void replace_findings(const std::string& instance, std::vector<Finding> now);

  std::map<std::string, Window> last_;                             // by instance
  std::map<std::pair<std::string, std::string>, Finding> active_;  // (instance, check)
};

}  // namespace switchyard::advisor
