// A bench run as it is reported: the method, one summary per step, and every
// request. Written to JSON, read back for `bench report`, drawn as HTML.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/load_generator.h"
#include "bench/request_record.h"
#include "bench/stats.h"
#include "bench/trace_report.h"

namespace switchyard::bench {

// A self-reported speed over this many times the measured one is "inflated".
constexpr double kInflatedRatio = 1.2;

struct Method {
  std::string api = "completions";  // completions | chat
  long input_len = 0;
  long output_len = 0;
  std::string prompt_mode;      // token_ids | text_exact | text_estimated
  long vocab_size = 0;          // token_ids: the vocabulary drawn from
  std::string loop = "closed";  // closed | open
  long warmup = 0;              // per step; -1: one per worker (N)
  long requests_per_step = 0;
  double duration_s = 0;
  double burstiness = 1;
  std::uint64_t seed = 0;
  // Mixed into the seed for the prompts, new on every run: a rerun's prompts
  // are not in the engine's prefix cache from the last one.
  std::uint64_t salt = 0;
  std::string description;  // one paragraph, for people
  // "standard" (the steps above) or "agent" (multi-turn sessions; below).
  std::string workload = "standard";
  int sessions = 0;
  int turns = 0;
  long start_context = 0;                         // tokens of a session's first prompt (about)
  long turn_growth_min = 0, turn_growth_max = 0;  // tokens added per turn
  double think_time_s = 0;
};

// Agent workload: every session's n-th turn, summarised. The turn's prompt
// re-sends the session's whole conversation, so from turn 2 on an engine
// with a prefix cache serves most of it from cache.
struct TurnReport {
  int turn = 0;  // 1-based
  long requests = 0;
  long succeeded = 0;
  Summary ttft_ms, e2e_ms;
  Summary prompt_tokens;  // usage.prompt_tokens
  Summary cached_tokens;  // timings.cache_n / usage.prompt_tokens_details.cached_tokens
  // Σ cached / Σ prompt tokens over the turn's requests that reported both;
  // empty when the engine reports no cache figures.
  std::optional<double> cached_ratio;
  long output_tokens = 0;
  double wall_s = 0;  // the turn's first send → its last response end
  double output_tokens_per_s = 0;
  std::map<std::string, long> errors;
};

struct StepReport {
  int concurrency = 0;  // closed loop: workers; open loop: most requests in flight
  double rate = 0;      // open loop: requests/s asked for
  // Open loop: arrivals actually sent per second, (sends − 1) / (last send −
  // first send); below `rate` when the generator or a gap draw fell behind.
  std::optional<double> achieved_rate;
  long requests = 0;  // measured, interrupted ones excluded
  long succeeded = 0;
  long short_outputs = 0;  // succeeded with fewer than output_len tokens
  long output_tokens = 0;
  double wall_s = 0;
  double output_tokens_per_s = 0;  // the headline: output_tokens / wall_s
  double requests_per_s = 0;
  Summary ttft_ms, itl_ms, tpot_ms, e2e_ms;
  Summary prompt_tokens;  // as usage reported them
  long warmup = 0;        // warm-up requests run before measuring
  // Succeeded requests with a prompt target and a usage.prompt_tokens; those
  // whose count is not their target, and the one furthest from it (its count
  // and target; -1 when none is off).
  long prompt_checked = 0;
  // Prompt tokens the engine said it served from its prefix cache
  // (timings.cache_n, usage.prompt_tokens_details.cached_tokens), summed over
  // the succeeded requests that reported it; -1: none did.
  long cached_tokens = -1;
  long prompt_off_target = 0;
  long worst_prompt_tokens = -1;
  long worst_prompt_target = -1;
  std::map<std::string, long> errors;                 // by kind
  std::map<std::string, std::string> error_examples;  // kind → first detail
  // The engine's own claim as an aggregate: each request's
  // timings.predicted_per_second over the time it was decoding, summed, per
  // wall second. Equals the measured decode throughput when the engine is honest.
  std::optional<double> self_reported_tokens_per_s;
  // Mean self-reported per-request decode speed over the measured one
  // (1 / TPOT): compares like with like, prefill excluded.
  std::optional<double> self_report_ratio;
  bool inflated = false;
  bool interrupted = false;
};

// Summarises a step's measured (non-warm-up, non-interrupted) records. An
// open-loop step's concurrency is the most requests that were in flight.
StepReport summarize_step(const StepPlan& plan, const StepOutcome& outcome);

struct RunReport {
  std::string label;     // --label: names the run in an overlaid report; "" for none
  std::string endpoint;  // the URL benchmarked
  std::string model;
  std::string started_at;  // ISO 8601, UTC
  Method method;
  bool simulated = false;  // the endpoint says its engines are simulated
  bool interrupted = false;
  std::vector<std::string> notes;  // what the reader must know (fallbacks, residuals)
  std::vector<StepReport> steps;
  std::vector<TurnReport> turns;     // agent workload only
  std::optional<TraceReport> trace;  // trace workload only
  std::vector<RequestRecord> requests;
};

}  // namespace switchyard::bench
