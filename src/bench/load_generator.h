// The load: streamed completion requests sent over pooled keep-alive
// connections from coroutines on one io_context, in a closed loop (N workers,
// each sending its next request when its last one ends) or an open loop
// (arrivals at a rate, whatever is in flight). One thread keeps up with
// thousands of streams: the work per chunk is a JSON parse and a clock read.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "bench/request_record.h"
#include "http/message.h"
#include "http/upstream.h"
#include "http/url.h"

namespace switchyard::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

struct LoadTarget {
  http::Url url;
  std::string path;       // "/v1/completions" or "/v1/chat/completions"
  http::Headers headers;  // Authorization, --header values
  // Longest silence inside a stream, and the wait for response headers.
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(120)};
  std::chrono::milliseconds first_byte_timeout{std::chrono::seconds(600)};
};

struct StepPlan {
  int step = 0;
  int concurrency = 1;    // closed loop: the workers; open loop: warm-up workers only
  double rate = 0;        // requests/s; > 0 makes the step an open loop
  double burstiness = 1;  // open loop: gamma shape of the gaps (1 = Poisson)
  std::uint64_t seed = 0;
  long warmup = 0;         // requests run (at `concurrency`) before measuring
  long requests = 0;       // measured requests; 0 when `duration_s` bounds the step
  double duration_s = 0;   // > 0: issue requests until then, and wait for them
  long forced_tokens = 0;  // a successful request with fewer is `short_output`
  // The prompt's length in tokens as the engine should count it; -1 when
  // the request has no exact target (an agent's later turns).
  long prompt_target = -1;
  bool keep_content = false;  // collect each request's generated text (RequestRecord::content)
  // The request body for the index-th request of a phase. Called just before
  // the request is sent, on the io_context's thread.
  std::function<std::string(long index, bool warmup)> body;
};

struct StepOutcome {
  std::vector<RequestRecord> records;  // warm-up and measured, in completion order
  double wall_s = 0;                   // first measured send → last measured response end
  bool interrupted = false;
};

// What a progress line shows about the measured phase of the running step.
struct LiveCounts {
  bool measuring = false;
  long done = 0;
  long tokens = 0;
  long total = 0;  // 0 when the step is bounded by duration
  double duration_s = 0;
  Clock::time_point started{};
};

// Not thread-safe: used from the io_context's one thread.
class LoadGenerator {
 public:
  LoadGenerator(boost::asio::any_io_executor executor, LoadTarget target,
                std::size_t max_connections);
  ~LoadGenerator();
  LoadGenerator(const LoadGenerator&) = delete;
  LoadGenerator& operator=(const LoadGenerator&) = delete;

  boost::asio::awaitable<StepOutcome> run_step(const StepPlan& plan);

  // Stops issuing requests and aborts those in flight (recorded as
  // `interrupted`); the running step returns what it has. For Ctrl-C.
  void stop();
  bool stopped() const { return stopping_; }

  const LiveCounts& live() const { return live_; }

 private:
  struct Phase;
  boost::asio::awaitable<void> closed_worker(const StepPlan& plan, Phase& phase);
  boost::asio::awaitable<void> open_request(const StepPlan& plan, Phase& phase, long index);
  boost::asio::awaitable<void> open_loop(const StepPlan& plan, Phase& phase);
  boost::asio::awaitable<void> run_phase(const StepPlan& plan, Phase& phase, bool open);
  boost::asio::awaitable<void> issue(const StepPlan& plan, Phase& phase, long index);
  boost::asio::awaitable<void> send_one(const std::string& body, RequestRecord& record);

  boost::asio::any_io_executor executor_;
  LoadTarget target_;
  http::UpstreamPool pool_;
  std::set<http::UpstreamCall*> in_flight_;
  boost::asio::steady_timer* arrival_timer_ = nullptr;  // the open loop's, while it waits
  bool stopping_ = false;
  LiveCounts live_;
};

// Runs `drive` on `io` to its end, or until SIGINT/SIGTERM stops `generator`
// (the run then ends with what it has). Rethrows what `drive` threw. Returns
// whether it was interrupted.
bool run_interruptible(boost::asio::io_context& io, LoadGenerator& generator,
                       boost::asio::awaitable<void> drive);

}  // namespace switchyard::bench
