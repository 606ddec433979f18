// `switchyard bench needle`: the long-context retrieval check (see needle.h)
// run against an endpoint, scored, and tabulated by context × depth.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/needle.h"
#include "bench/report_html.h"
#include "common/result.h"

namespace switchyard::bench {

struct NeedleOptions {
  std::string url;
  std::string model;
  long context = 131072;                   // the request's size in tokens (prompt + answer budget)
  std::vector<long> contexts;              // several sizes; non-empty replaces `context`
  int needles = 3;                         // per request, at successive sentence boundaries
  std::vector<double> depths{10, 50, 90};  // percent of the haystack
  int trials = 1;                          // requests per context × depth, each with new needles
  long output_len = 128;                   // the answer's token budget (max_tokens)
  std::string api_key;
  std::vector<std::string> headers;
  std::uint64_t seed = 0;
  std::string tokenize_url;  // "": {url}/tokenize
  std::string json_path;
  std::string html_path;       // the score grid as a heat map ("" for none)
  std::string label;           // names the run in reports; "" for "endpoint model"
  bool simulated = false;      // label the run simulated even if the endpoint does not say so
  double stream_idle_s = 600;  // a long prefill is silent
};

Result<bool> validate(const NeedleOptions& options);

// One request of the check, as it is reported.
struct NeedleCell {
  long context = 0;
  double depth = 0;
  int trial = 0;            // 1-based
  long prompt_tokens = -1;  // usage.prompt_tokens; -1 if not reported
  long counted_tokens = 0;  // the user message as /tokenize counted it
  std::vector<Needle> needles;
  std::vector<double> needle_percent;  // where each needle starts, % of the message
  std::vector<bool> found;
  int hits = 0;
  double score = 0;
  double ttft_ms = -1;
  double e2e_ms = 0;
  std::string answer;
  std::string error;  // "" when the request succeeded
  std::string error_detail;
};

struct NeedleReport {
  std::string endpoint;
  std::string model;
  std::string started_at;
  bool simulated = false;
  bool interrupted = false;
  bool token_counts_estimated = false;  // no /tokenize: sizes are estimates
  NeedleOptions options;
  std::vector<long> contexts;
  std::vector<std::string> notes;
  std::vector<NeedleCell> cells;
};

// The simulated-engine warning, printed whenever the endpoint is known simulated.
extern const char* const kNeedleSimulatedWarning;

// The table: one row per request, then the mean score by context × depth.
std::string format_needle_table(const NeedleReport& report);

// The JSON document (`--json FILE`).
std::string needle_to_json(const NeedleReport& report);

// The mean score by context × depth, for the HTML report.
NeedleGrid needle_grid(const NeedleReport& report);

// Reads needle_to_json's scores[] back (for `bench report`); the error names
// the file and what is wrong.
Result<NeedleGrid> needle_grid_from_json(const std::string& text, const std::string& source);

// Probes, sizes and sends every request, prints the table, writes the JSON.
// 0: every request answered (the score does not set the status); 1: an
// error; 2: bad options; 130: interrupted.
int run_needle(const NeedleOptions& options);

}  // namespace switchyard::bench
