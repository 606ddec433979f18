// What `switchyard bench` is asked to do. Validated once by validate().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace switchyard::bench {

struct BenchOptions {
  // The endpoint: an engine (llama-server, vLLM), a gateway or a sim.
  std::string url;
  // The model name sent in every request; must be among /v1/models when it
  // lists several. "" or an unlisted name: the endpoint's one model.
  std::string model;
  // Prompt length in tokens as the engine counts them (2048: the field reports' method).
  long input_len = 2048;
  // Forced output length (max_tokens + ignore_eos + min_tokens).
  long output_len = 256;
  // Closed-loop steps: requests in flight (each worker sends its next on completion).
  std::vector<int> concurrency{1, 2, 4, 8};
  // Open-loop steps (requests/s, Poisson or gamma arrivals); non-empty replaces
  // `concurrency` (which then only sizes the warm-up).
  std::vector<double> rates;
  // Gamma shape of open-loop gaps: 1 Poisson; < 1 burstier; > 1 more regular.
  double burstiness = 1.0;
  std::string api_key;               // sent as "Authorization: Bearer"
  std::vector<std::string> headers;  // extra "Name: value" headers
  std::uint64_t seed = 0;            // prompts and arrivals are a function of it
  // Measured requests per step; 0: 4 × N (at least 8). Excludes --duration.
  long requests_per_step = 0;
  // Seconds per step instead of a request count (requests issued until then).
  double duration_s = 0;
  // Warm-up requests per step, excluded from every number; -1: N (one per worker).
  long warmup = -1;
  std::string endpoint = "completions";  // completions | chat
  // Where to count tokens: a /tokenize URL, or a base URL ("": {url}) to
  // which /tokenize is added.
  std::string tokenize_url;
  // Text prompts without a tokenizer that answers: estimated lengths
  // instead of exit 2.
  bool allow_estimate = false;
  // Vocabulary for token-id prompts when /v1/models has no meta.n_vocab; 0: none.
  long vocab_size = 0;
  std::string json_path;  // --json FILE; "" for none
  std::string html_path;  // --html FILE; "" for none
  std::string label;      // --label NAME: the run's name in (overlaid) reports; "" for none
  // Label the report "simulated engines" even if the endpoint does not say so
  // (a gateway in front of sims hides them).
  bool simulated = false;
  // Longest silence inside one stream before the request counts as timed out.
  double stream_idle_s = 120;
  // "standard" (concurrency or rate steps), "agent": `sessions` multi-turn
  // chats re-sending their growing context (chat API; --concurrency, --rate
  // and --input-len do not apply), or "trace": the timed requests of
  // `trace_path` replayed (trace_workload.h; the same flags do not apply).
  std::string workload = "standard";
  std::string trace_path;  // --trace FILE: JSON lines, for --workload trace
  int sessions = 4;
  int turns = 5;
  long start_context = 8192;              // tokens of each session's first prompt
  std::string turn_growth = "1024-2048";  // tokens added per turn: "MIN-MAX" or "N"
  std::string think_time = "2s";          // pause between a session's turns: "2s", "500ms"
};

// Checks ranges and combinations; the error names the flag.
Result<bool> validate(const BenchOptions& options);

}  // namespace switchyard::bench
