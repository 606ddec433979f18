// The simulated engine: the Scheduler (scheduler.h) paced in real time by one
// loop per engine, sequences that callers submit and read tokens from, and
// the counters both dialects' /metrics report. It knows nothing of HTTP.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <unordered_map>
#include <vector>

#include "sim/scheduler.h"
#include "sim/tokenizer.h"

namespace switchyard::sim {

struct EngineOptions {
  // The model: slots or KV pool, batching, timing (scheduler.h).
  SchedulerOptions scheduler;
  // Runs the model this many times faster than real time; tests use 10-1000.
  // Default 1.
  double speed_factor = 1.0;
  // Multiplies the generation speed the engine reports about itself
  // (llama.cpp timings.predicted_per_second and
  // llamacpp:predicted_tokens_seconds), never the speed it delivers: a
  // benchmark's detector of inflated self-reports must catch it. Default 1.
  double over_report = 1.0;
  // Seeds output text, lengths and ids: the same seed and request order give
  // the same responses. Default 42.
  std::uint64_t seed = 42;
};

// Checks the options once; the error names the field.
std::optional<Error> validate(const EngineOptions& options);

// Fixed-bucket latency histogram (Prometheus semantics: cumulative buckets).
struct Histogram {
  explicit Histogram(std::vector<double> bounds)
      : bounds(std::move(bounds)), counts(this->bounds.size() + 1) {}
  void observe(double v);
  std::vector<double> bounds;
  std::vector<std::uint64_t> counts;  // per bucket, not cumulative; last: +Inf
  double sum = 0;
  std::uint64_t count = 0;
};

// Everything /metrics reports, in wall-clock seconds.
struct EngineCounters {
  std::uint64_t prompt_tokens_total = 0;  // prompt tokens evaluated (not from cache)
  double prompt_seconds_total = 0;        // per request: admission to first token
  std::uint64_t tokens_predicted_total = 0;
  double tokens_predicted_seconds_total = 0;  // per request: first token to last
  std::uint64_t n_decode_total = 0;           // engine steps
  std::uint64_t busy_slots_total = 0;         // sum over steps of sequences running
  std::uint64_t n_tokens_max = 0;             // largest step, in tokens
  int max_requests_processing = 0;            // highest running count seen
  std::uint64_t requests_deferred_total = 0;  // requests that ever waited
  std::uint64_t tokens_delivered_total = 0;   // tokens handed to readers
  std::uint64_t requests_finished_total = 0;
  std::uint64_t prompt_tokens_requested = 0;  // all prompt tokens of admitted requests
  // Speculative decoding.
  std::uint64_t spec_drafts = 0;
  std::uint64_t spec_draft_tokens = 0;
  std::uint64_t spec_accepted_tokens = 0;
  std::vector<std::uint64_t> spec_accepted_per_position;
  // vLLM's latency histograms.
  Histogram time_to_first_token{{0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                 0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                 20.0,  40.0,  80.0, 160.0, 640.0, 2560.0}};
  Histogram inter_token_latency{{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
                                 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}};
  Histogram e2e_request_latency{{0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                 5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}};
  Histogram request_queue_time{{0.3,  0.5,   0.8,   1.0,   1.5,   2.0,    2.5,
                                5.0,  10.0,  15.0,  20.0,  30.0,  40.0,   50.0,
                                60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}};
};

// One request's life in the engine, as its reader sees it.
struct SequenceState {
  using time_point = std::chrono::steady_clock::time_point;
  explicit SequenceState(boost::asio::any_io_executor ex) : signal(ex, time_point::max()) {}

  SeqId id = 0;
  int n_prompt = 0;
  int cached = 0;  // prompt tokens served from cache (first admission)
  int preemptions = 0;
  int slot = -1;  // slots mode: the slot it ran on
  bool finished = false;
  std::deque<Token> pending;  // generated, not yet read
  time_point submitted{};
  time_point admitted{};  // first admission
  time_point first_token{};
  time_point last_token{};
  time_point finished_at{};
  bool was_admitted = false;
  bool has_first_token = false;
  boost::asio::steady_timer signal;  // cancelled when pending or finished change
};

class Engine;

// A submitted sequence; dropping it cancels the sequence in the engine
// (freeing its slot), as a client that goes away does.
class Sequence {
 public:
  Sequence() = default;
  Sequence(Engine* engine, std::shared_ptr<SequenceState> state,
           std::shared_ptr<const bool> engine_alive)
      : engine_(engine), state_(std::move(state)), engine_alive_(std::move(engine_alive)) {}
  Sequence(Sequence&& o) noexcept
      : engine_(std::exchange(o.engine_, nullptr)),
        state_(std::move(o.state_)),
        engine_alive_(std::move(o.engine_alive_)) {}
  Sequence& operator=(Sequence&& o) noexcept;
  ~Sequence();

  const SequenceState& state() const { return *state_; }
  explicit operator bool() const { return engine_ != nullptr; }

 private:
  friend class Engine;
  void drop();

  Engine* engine_ = nullptr;
  std::shared_ptr<SequenceState> state_;
  // False once the engine is gone: at shutdown the io_context destroys
  // request coroutines (and their Sequences) after the Engine.
  std::shared_ptr<const bool> engine_alive_;
};

class Engine {
 public:
  // Starts the engine's loop on `executor`. Precondition: validate(options).
  Engine(boost::asio::any_io_executor executor, EngineOptions options);
  ~Engine();

  const EngineOptions& options() const { return options_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  const Scheduler& scheduler() const { return scheduler_; }
  SchedulerMode mode() const { return options_.scheduler.mode; }
  int slot_context() const { return options_.scheduler.slot_context; }
  int max_seqs() const { return options_.scheduler.max_seqs; }

  // Queues a request; it runs as soon as a slot (and KV) allows.
  Sequence submit(SeqRequest request);
  // The next generated token, or nullopt once the sequence has finished.
  // Throws operation_aborted when the awaiting coroutine is cancelled.
  boost::asio::awaitable<std::optional<Token>> next(Sequence& seq);
  // Stops generating for `seq` but keeps its slot until it is dropped.
  void hold(Sequence& seq);

  // How long the model "wants" to answer when not forced: 16-128 tokens.
  int natural_length();

  const EngineCounters& counters() const { return counters_; }
  int requests_running() const { return scheduler_.running(); }
  int requests_waiting() const { return scheduler_.waiting(); }

 private:
  friend class Sequence;
  void cancel(SequenceState& state);
  boost::asio::awaitable<void> loop();
  void apply(const Step& step, std::chrono::steady_clock::time_point now);
  void stamp_admitted(const std::vector<SeqId>& ids, std::chrono::steady_clock::time_point now);
  void wake();
  std::chrono::steady_clock::duration scaled(double seconds) const;

  boost::asio::any_io_executor executor_;
  const EngineOptions options_;
  const Tokenizer tokenizer_;
  // Guarded by the executor's single thread.
  Scheduler scheduler_;
  std::unordered_map<SeqId, std::shared_ptr<SequenceState>> live_;
  boost::asio::steady_timer wake_;
  std::shared_ptr<bool> alive_;
  std::mt19937_64 rng_;
  EngineCounters counters_;
};

}  // namespace switchyard::sim
