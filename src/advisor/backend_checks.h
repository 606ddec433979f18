// Backend checks as pure functions over what two scrapes of an engine
// returned: /metrics (Prometheus text), /props and /slots (llama-server) and
// /v1/models (vLLM's max_model_len), a known wall time apart. No I/O here, so
// tests run them on canned texts; doctor/backend_probe.h fetches for doctor, obs/engine_scraper for
// the gateway.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "advisor/finding.h"

namespace switchyard::advisor {

enum class Engine { vllm, llama_cpp, unknown };
const char* to_string(Engine engine);

// One round of fetching a backend. A body is nullopt when the endpoint did not
// answer 200 (vLLM serves no /props or /slots; llama-server without --metrics
// answers 501 on /metrics).
struct Scrape {
  std::optional<std::string> metrics;
  std::optional<std::string> props;
  std::optional<std::string> slots;
};

struct BackendObservation {
  std::string url;
  Scrape first;
  Scrape second;
  double window_seconds = 0;          // wall time between the two /metrics answers
  std::optional<std::string> models;  // /v1/models body
  std::optional<int> max_num_seqs;    // the engine's --max-num-seqs, when the operator says
};

struct Measurement {
  std::string name;  // stable, e.g. "generation_tokens_per_s"
  double value = 0;
  std::string unit;  // "tok/s", "tokens", "ratio", "s", "requests"
};

struct BackendReport {
  std::string url;
  Engine engine = Engine::unknown;
  bool reachable = true;
  double window_seconds = 0;
  std::vector<Measurement> measurements;
  std::vector<Finding> findings;
};

// Thresholds (docs/doctor.md): KV "near full" at 90% usage; self-reported
// speed flagged above 1.2× the measured tokens/wall; speculative decoding
// flagged below 50% acceptance.
BackendReport analyze_backend(const BackendObservation& observation);

}  // namespace switchyard::advisor
