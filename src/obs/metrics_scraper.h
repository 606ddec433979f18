// Scrapes each ready instance's /metrics every health.metrics_interval
// (but not an engine asleep by its own word: a scrape would wake it), for
// the gateway to re-export (obs/engine_metrics.h) and to run the advisor's
// checks on. Knows nothing of either: subscribers get each scrape.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fleet/instance.h"

namespace switchyard::obs {

struct EngineMetrics {
  std::string text;                          // the last 200 answer's body
  std::chrono::steady_clock::time_point at;  // when it arrived
  // The last round that found the engine idle since the scrape before this
  // one (its figures were still that scrape's): a window to measure rates
  // over starts there. Unset: no round skipped it.
  std::optional<std::chrono::steady_clock::time_point> idle_at;
};

// The work the gateway has given an instance.
struct EngineWork {
  int in_flight = 0;
  std::uint64_t started = 0;  // requests sent to it, ever
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
  // Where the work is read: an engine idle since its last scrape (nothing in
  // flight then or now, nothing started since) is not scraped again until it
  // works, once it has been scraped twice (a window for the advisor). Its figures have not moved,
  // and a GET /metrics wakes a llama-server that sleeps (--sleep-idle-seconds) and starts its idle
  // time over, so that one scraped every interval would never sleep. Unset: every ready instance,
  // every interval.
  void on_work(std::function<EngineWork(std::size_t index)> work);

  void start();
  void stop();

  // The last scrape of each ready instance that answers, by name.
  const std::map<std::string, EngineMetrics>& latest() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace switchyard::obs
