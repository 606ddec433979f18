// The simulated engine's core: slots, the wait for a free slot, and the clock
// that paces prefill and decode. It knows nothing of HTTP or dialects.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sim/tokenizer.h"

namespace switchyard::sim {

struct EngineOptions {
  // Parallel sequences (llama-server -np). Requests beyond them wait, FIFO.
  int slots = 1;
  // Total context (llama-server -c), split evenly across slots.
  int ctx_size = 8192;
  // Decode speed of one sequence, tokens per second.
  double tokens_per_second = 65.0;
  // Prompt processing speed, tokens per second.
  double prefill_tokens_per_second = 900.0;
  // Runs the model this many times faster than real time; tests use 10-1000.
  double speed_factor = 1.0;
  // Seeds output text and lengths: the same seed and request order give the
  // same responses.
  std::uint64_t seed = 42;
};

// Counters as llama-server's /metrics reports them, plus two high-water marks
// that let tests assert what a gateway did to this engine.
struct EngineCounters {
  std::uint64_t prompt_tokens_total = 0;
  double prompt_seconds_total = 0;
  std::uint64_t tokens_predicted_total = 0;
  double tokens_predicted_seconds_total = 0;
  std::uint64_t n_decode_total = 0;
  std::uint64_t n_tokens_max = 0;
  int requests_processing = 0;
  int requests_deferred = 0;
  int max_requests_processing = 0;            // highest requests_processing seen
  std::uint64_t requests_deferred_total = 0;  // requests that ever waited for a slot
  double last_prompt_per_second = 0;
  double last_predicted_per_second = 0;
};

struct SlotView {
  int id = 0;
  bool processing = false;
  std::uint64_t task = 0;
  int n_prompt = 0;
  int n_cached = 0;
  int n_decoded = 0;
  int n_remain = 0;
};

class Engine;

// Exclusive use of one slot; returns it (and wakes the next waiter) when
// destroyed.
class SlotLease {
 public:
  SlotLease() = default;
  SlotLease(Engine* engine, int slot) : engine_(engine), slot_(slot) {}
  SlotLease(SlotLease&& o) noexcept : engine_(std::exchange(o.engine_, nullptr)), slot_(o.slot_) {}
  SlotLease& operator=(SlotLease&& o) noexcept;
  ~SlotLease();
  int slot() const { return slot_; }
  explicit operator bool() const { return engine_ != nullptr; }

 private:
  Engine* engine_ = nullptr;
  int slot_ = -1;
};

class Engine {
 public:
  Engine(boost::asio::any_io_executor executor, EngineOptions options);

  const EngineOptions& options() const { return options_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }
  int slot_context() const { return options_.ctx_size / options_.slots; }

  // Waits (FIFO) for a free slot. Cancellation-safe: a waiter cancelled
  // before it is granted a slot leaves the queue.
  boost::asio::awaitable<SlotLease> acquire();

  // Processes the prompt on the leased slot, reusing the longest common prefix
  // with that slot's previous prompt. Returns how many tokens came from cache.
  boost::asio::awaitable<int> prefill(const SlotLease& lease, const std::vector<Token>& prompt,
                                      std::uint64_t task);

  // Produces one token on the leased slot, taking one decode step of time.
  boost::asio::awaitable<Token> decode(const SlotLease& lease, int remaining);

  // How long the model "wants" to answer when not forced: 16-128 tokens.
  int natural_length();

  const EngineCounters& counters() const { return counters_; }
  std::vector<SlotView> slots() const;
  std::uint64_t next_task_id() { return ++task_counter_; }

 private:
  friend class SlotLease;
  void release(int slot);
  std::chrono::steady_clock::duration scaled(double seconds) const;
  boost::asio::awaitable<void> sleep_until(std::chrono::steady_clock::time_point t);

  struct Slot {
    bool busy = false;
    SlotView view;
    std::vector<Token> last_prompt;                   // for the prefix cache
    std::chrono::steady_clock::time_point next_step;  // paces decode
    std::chrono::steady_clock::time_point decode_started;
  };
  struct Waiter;

  boost::asio::any_io_executor executor_;
  const EngineOptions options_;
  const Tokenizer tokenizer_;
  std::vector<Slot> slots_;
  std::deque<std::shared_ptr<Waiter>> waiters_;
  std::mt19937_64 rng_;
  EngineCounters counters_;
  std::uint64_t task_counter_ = 0;
};

}  // namespace switchyard::sim
