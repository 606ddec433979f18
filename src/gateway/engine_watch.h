// Each ready engine's /metrics, scraped on a timer (obs::MetricsScraper) and
// read as it comes: doctor's backend checks run on it (the live advisor),
// and a vLLM engine's KV pool size goes to the router.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <chrono>

#include "advisor/live_advisor.h"
#include "gateway/router.h"
#include "obs/metrics_scraper.h"

namespace switchyard::gateway {

class EngineWatch {
 public:
  // Both references must outlive the watch; scraping starts now.
  EngineWatch(boost::asio::any_io_executor executor, const InstanceTable& instances,
              std::chrono::milliseconds interval, Router& router);
  ~EngineWatch() { scraper_.stop(); }

  const obs::MetricsScraper& scraper() const { return scraper_; }
  const advisor::LiveAdvisor& advisor() const { return advisor_; }

 private:
  obs::MetricsScraper scraper_;
  advisor::LiveAdvisor advisor_;
};

}  // namespace switchyard::gateway
