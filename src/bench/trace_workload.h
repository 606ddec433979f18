// `--workload trace`: replays a file of timed requests, one JSON object per
// line, so any fleet can be judged on the same day:
//
//   {"t": 12.5, "input_len": 2048, "output_len": 256, "session": "chat-1", "label": "trickle"}
//
// Each request is sent at its `t` (seconds from the start) whatever is in
// flight, with a prompt of exactly `input_len` tokens and `output_len`
// forced. The requests of one session share their prefix (each is a prefix
// of the session's own text), so caches and session routing behave as
// they would for an agent. `switchyard usage --trace` lines are read too
// (prompt_tokens, completion_tokens / max_tokens).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/load_generator.h"
#include "bench/prompt_builder.h"
#include "bench/request_record.h"
#include "bench/trace_report.h"
#include "common/result.h"

namespace switchyard::bench {

struct TraceEntry {
  double t = 0;         // seconds from the start
  long input_len = 0;   // prompt tokens, >= 1
  long output_len = 0;  // forced output tokens, >= 1
  std::string session;  // "" : a request of its own
  std::string label;    // the phase it is summarised under; "" : "-"
  std::string model;    // "" : the run's model
  int line = 0;         // 1-based line in the file
};

// Parses a trace. Blank lines are skipped; entries come back ordered by t
// (stable). Fields: t (number >= 0), input_len (or prompt_tokens), output_len
// (else completion_tokens when > 0, else max_tokens, else
// `default_output_len`), session, label (or phase), model (strings). Unknown
// fields are ignored. The error names the line and the field:
// "line 3: input_len: must be a whole number >= 1".
Result<std::vector<TraceEntry>> parse_trace(std::string_view text, long default_output_len);

// One entry as a trace line (what parse_trace reads).
std::string trace_line(const TraceEntry& entry);

// Per entry, the index of its session among the trace's sessions in order of
// first appearance (0-based); an entry without a session gets one of its own.
std::vector<int> session_indices(const std::vector<TraceEntry>& entries);

// Where prompts come from: token ids (an engine that names its vocabulary)
// or random English words sized with the engine's tokenizer (`count`; none:
// one token per word, estimated).
struct TracePromptSource {
  bool token_ids = false;
  TokenIdRange ids;
  CountTokens count;  // empty: estimated
  long overhead = 0;  // tokens the engine adds around a text prompt
  std::uint64_t seed = 0;
};

// Per entry, its prompt: token ids (a JSON array) or text (a JSON string).
// Each session draws one stream (of its longest request) and every request
// of the session is a prefix of it, so they share their prefix; texts are
// sized to input_len exactly where `count` is given.
Result<std::vector<boost::json::value>> build_trace_prompts(const std::vector<TraceEntry>& entries,
                                                            const TracePromptSource& source);

// The longest prefix of `text` (whole words) that `count` says is at most
// `target` tokens, found in a few calls, and where the next word would jump
// past the target, short filler words after it to reach it; `count`'s errors.
Result<std::string> exact_prefix(const std::string& text, long target, const CountTokens& count);

// The streamed request of one entry: forced output length, usage asked for.
// `chat`: a chat completion with the prompt as one user message.
std::string trace_body(const std::string& model, bool chat, const boost::json::value& prompt,
                       long output_len);

struct TraceOutcome {
  std::vector<RequestRecord> records;  // in entry order; start_s from the trace's start
  double makespan_s = 0;               // start → the last response's end
  double started_unix_s = 0;
  double worst_late_ms = 0;
  bool interrupted = false;
};

// Sends every body at its entry's t (relative to the start) and waits for
// them all. Records get session (1-based index), turn (the entry's ordinal in
// its session, 1-based), label and the prompt target set.
boost::asio::awaitable<TraceOutcome> run_trace(LoadGenerator& generator,
                                               boost::asio::any_io_executor executor,
                                               const std::vector<TraceEntry>& entries,
                                               const std::vector<std::string>& bodies);

// The most requests that were in flight at once (the step row's N).
int peak_concurrency(const std::vector<RequestRecord>& records);

// Per label (in order of first appearance), over the measured records.
std::vector<PhaseReport> summarize_phases(const std::vector<RequestRecord>& records);

// The `trace` object of the JSON report.
boost::json::object trace_json(const TraceReport& trace);

// The per-phase table printed under the step row.
std::string format_trace(const TraceReport& trace);

}  // namespace switchyard::bench
