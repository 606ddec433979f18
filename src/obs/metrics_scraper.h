// Scrapes each ready instance's /metrics every health.metrics_interval, for
// the gateway to re-export (obs/engine_metrics.h) and to run the advisor's
// checks on. Knows nothing of either: subscribers get each scrape.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fleet/instance.h"

namespace switchyard::obs {

struct EngineMetrics {
  std::string text;                          // the last 200 answer's body
  std::chrono::steady_clock::time_point at;  // when it arrived
};

class MetricsScraper {
 public:
  using InstanceTable = std::vector<std::unique_ptr<fleet::Instance>>;
  // `instances` must outlive the scraper's loop (stop() ends it). Runs on
  // `executor` (one thread), like the fleet.
  MetricsScraper(boost::asio::any_io_executor executor, const InstanceTable& instances,
                 std::chrono::milliseconds interval);
  ~MetricsScraper();  // stops the loop
  MetricsScraper(const MetricsScraper&) = delete;
  MetricsScraper& operator=(const MetricsScraper&) = delete;

  // Called after each scrape that answered 200: the instance and its text.
  void on_scrape(std::function<void(const fleet::Instance&, const EngineMetrics&)> callback);
  // Called when an instance's series are dropped: it is no longer ready, or
  // its /metrics stopped answering 200 (llama-server without --metrics).
  void on_forget(std::function<void(const std::string& name)> callback);

  void start();
  void stop();

  // The last scrape of each ready instance that answers, by name.
  const std::map<std::string, EngineMetrics>& latest() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace switchyard::obs
