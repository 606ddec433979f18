// What the bench measured about one request: the unit every statistic and
// the JSON `requests[]` are built from.
#pragma once

#include <string>
#include <vector>

namespace switchyard::bench {

struct RequestRecord {
  int step = 0;               // index into the run's steps
  long index = 0;             // order of issue within the step
  bool warmup = false;        // excluded from every statistic
  double start_s = 0;         // when it was sent, seconds from the step's start
  double ttft_ms = -1;        // send → first content chunk; -1 if none arrived
  double e2e_ms = 0;          // send → end of the response (or the failure)
  double last_token_ms = -1;  // send → last content chunk
  long content_chunks = 0;    // SSE events that carried generated text
  // Gaps between successive content chunks (ms), each divided by the
  // request's tokens per chunk (1 on llama.cpp), so ITL is per token.
  std::vector<double> itl_ms;
  long prompt_tokens = -1;        // usage.prompt_tokens; -1 if never reported
  long prompt_target = -1;        // the length asked for; -1 when there is no exact target
  long completion_tokens = -1;    // usage.completion_tokens; -1 if never reported
  long cached_tokens = -1;        // timings.cache_n or prompt_tokens_details.cached_tokens
  double self_reported_tps = -1;  // timings.predicted_per_second; -1 if absent
  std::string finish_reason;
  // "" when it succeeded; else a kind: connect, timeout, reset, protocol,
  // http_<status>, stream_error, truncated, interrupted.
  std::string error;
  std::string error_detail;   // one line, for the first error of each kind
  bool short_output = false;  // succeeded but produced fewer than the forced tokens
  bool simulated = false;     // the response carried X-Simulated: switchyard-sim
  // Agent workload: the conversation (1-based) and its turn (1-based); -1 otherwise.
  int session = -1;
  int turn = -1;
  std::string label;  // trace workload: the line's label ("" otherwise)
  // When set before the request, `content` collects the generated text
  // (delta.content / text) as streamed: an agent's next turn re-sends it, a
  // needle answer is scored from it.
  bool keep_content = false;
  std::string content;

  bool ok() const { return error.empty(); }
  // Generated tokens: usage when reported, else the content chunks.
  long output_tokens() const { return completion_tokens >= 0 ? completion_tokens : content_chunks; }
  // (last token − first token) / (tokens − 1): decode time per token; -1 if undefined.
  double tpot_ms() const;
};

}  // namespace switchyard::bench
