// Fetches what backend_checks analyses: every backend's /metrics, /props and
// /slots, twice, `interval` apart (plus /v1/models once), through an injected
// fetch function so tests run without a network. Production passes
// switchyard::http::fetch.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "advisor/backend_checks.h"
#include "common/result.h"
#include "http/fetch.h"

namespace switchyard::doctor {

// The checks themselves live in advisor/, which the gateway runs on its scrapes.
using advisor::analyze_backend;
using advisor::BackendObservation;
using advisor::BackendReport;
using advisor::Engine;
using advisor::Scrape;
using advisor::Severity;

using Fetcher = std::function<Result<http::FetchResponse>(const http::FetchRequest&)>;

struct ProbeOptions {
  // Between the two scrapes. Longer windows average out bursts; rates are
  // tokens over this wall time. Default 3 s.
  std::chrono::milliseconds interval{3000};
  // Per request. Default 5 s: a healthy engine answers /metrics in
  // milliseconds even under load.
  std::chrono::milliseconds timeout{5000};
  // The engines' --max-num-seqs, when the operator knows it (vLLM does not
  // publish it); enables the exact KV-capacity check.
  std::optional<int> max_num_seqs;
};

// Scrapes all backends, waits once, scrapes all again, and analyses each. A
// backend that cannot be reached gets a report with reachable = false and a
// warning naming the error; the others are unaffected. URLs end without '/'.
std::vector<BackendReport> probe_backends(const std::vector<std::string>& urls,
                                          const Fetcher& fetch, const ProbeOptions& options);

}  // namespace switchyard::doctor
