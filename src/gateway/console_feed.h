// What the dashboard shows beyond the status snapshot: the requests running
// now, the last finished ones, and one point per second for the charts
// (output tokens/s, queue depth, TTFT p50/p99, requests by outcome) over the
// last 15 minutes, sampled by a timer of its own so the history exists
// before anyone opens the page.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/intrusive/list.hpp>

#include <array>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <set>
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
  std::string id, key, session, model, instance, outcome;
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
  // Running requests in the dashboard's picture, the oldest first (with the
  // count of all): a queue of thousands made a picture of megabytes a
  // second for each open page.
  static constexpr std::size_t kRunningShown = 100;
  // What a chart point reads at each second: the fleet's tokens/s and queue depth.
  struct Gauges {
    double tokens_per_second = 0;
    int queued = 0;
  };

  ConsoleFeed(boost::asio::any_io_executor executor, std::function<Gauges()> gauges);
  ~ConsoleFeed();

  // A request running: its record, the key's name and the agent session,
  // which the pipeline fills in as it goes. The request's context holds it,
  // so that a request leaves the list in constant time (a list searched at
  // every end cost 15,000 instructions a request with 10,000 waiting), and
  // one destroyed without finish() leaves it all the same.
  struct Running : boost::intrusive::list_base_hook<
                       boost::intrusive::link_mode<boost::intrusive::auto_unlink>> {
    const RequestRecord* record = nullptr;
    const std::string* key = nullptr;
    const std::string* session = nullptr;
  };
  using RunningList = boost::intrusive::list<Running, boost::intrusive::constant_time_size<false>>;

  // A request starts / ends; `record`, `key` and `session` must stay valid
  // in between, as must `entry`, which begin() lists (once) and finish()
  // takes off.
  void begin(Running& entry, const RequestRecord& record, const std::string& key,
             const std::string& session);
  void finish(Running& entry);

  const RunningList& running() const { return running_; }
  // The last kRecent finished requests, newest first.
  template <class F>
  void each_recent(F f) const {
    for (std::size_t i = 0; i < recent_count_; ++i)
      f(recent_[(recent_next_ + kRecent - 1 - i) % kRecent]);
  }
  const std::deque<ChartPoint>& history() const { return history_; }

  // The event streams' waits for their next tick: something worth showing
  // at once (an instance's state, a switch's step) cuts them short, so a
  // step shorter than a tick is not missed. A stream adds its timer while
  // it waits.
  void add_stream(boost::asio::steady_timer& tick) { streams_.insert(&tick); }
  void remove_stream(boost::asio::steady_timer& tick) { streams_.erase(&tick); }
  void changed();

 private:
  void sample();
  void arm();

  std::function<Gauges()> gauges_;
  boost::asio::steady_timer timer_;
  RunningList running_;
  // A ring written in place: a finished request reuses the strings of the
  // one it replaces (a deque allocated a block every other request, and
  // six strings each).
  std::array<FinishedRequest, kRecent> recent_;
  std::size_t recent_next_ = 0, recent_count_ = 0;
  std::deque<ChartPoint> history_;
  std::set<boost::asio::steady_timer*> streams_;
  // The second in progress.
  std::vector<double> ttfts_;
  ChartPoint pending_;
};

}  // namespace switchyard::gateway
