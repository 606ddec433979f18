// What the dashboard shows beyond the status snapshot: the requests running
// now, the last finished ones, and one point per second for the charts
// (output tokens/s, queue depth, TTFT p50/p99, requests by outcome) over the
// last 15 minutes, sampled by a timer of its own so the history exists
// before anyone opens the page.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gateway/request_record.h"

namespace switchyard::gateway {

struct ChartPoint {
  double t = 0;  // Unix seconds
  double tokens_per_second = 0;
  int queued = 0;
  double ttft_p50 = -1;  // seconds; < 0 when no request had a first byte that second
  double ttft_p99 = -1;
  int ok = 0, error = 0, upstream_failed = 0, client_closed = 0;  // requests ended that second
};

struct FinishedRequest {
  std::string id, key, model, instance, outcome;
  int status = 0;
  double ttft = -1;  // seconds
  double duration = 0;
  long completion_tokens = -1;  // < 0: the engine reported no usage
  double at = 0;                // Unix seconds
};

// Used from the gateway's one I/O thread (not locked).
class ConsoleFeed {
 public:
  static constexpr std::size_t kHistoryPoints = 900;  // 15 minutes, one a second
  static constexpr std::size_t kRecent = 50;
  // What a chart point reads at each second: the fleet's tokens/s and queue depth.
  struct Gauges {
    double tokens_per_second = 0;
    int queued = 0;
  };

  ConsoleFeed(boost::asio::any_io_executor executor, std::function<Gauges()> gauges);
  ~ConsoleFeed();

  // A request starts / ends; `record` and `key` must stay valid in between.
  void begin(const RequestRecord& record, const std::string& key);
  void finish(const RequestRecord& record, const std::string& key);

  const std::vector<std::pair<const RequestRecord*, const std::string*>>& running() const {
    return running_;
  }
  const std::deque<FinishedRequest>& recent() const { return recent_; }
  const std::deque<ChartPoint>& history() const { return history_; }

 private:
  void sample();
  void arm();

  std::function<Gauges()> gauges_;
  boost::asio::steady_timer timer_;
  std::vector<std::pair<const RequestRecord*, const std::string*>> running_;
  std::deque<FinishedRequest> recent_;
  std::deque<ChartPoint> history_;
  // The second in progress.
  std::vector<double> ttfts_;
  ChartPoint pending_;
};

}  // namespace switchyard::gateway
