// What `--workload trace` reports beyond the usual step row: one summary
// per label (a phase of the day: trickle, burst, cold, ...) and the day's
// makespan. Part of RunReport; written to JSON as `trace`.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "bench/stats.h"

namespace switchyard::bench {

struct PhaseReport {
  std::string label;  // the lines' `label` (or `phase`); "-" for lines without one
  long requests = 0;  // interrupted ones excluded
  long succeeded = 0;
  long failed = 0;  // requests - succeeded
  long short_outputs = 0;
  Summary ttft_ms, e2e_ms;
  double first_send_s = 0;  // seconds from the trace's start
  double last_end_s = 0;
  std::map<std::string, long> errors;  // by kind
};

struct TraceReport {
  std::string file;
  long requests = 0;      // lines replayed
  long sessions = 0;      // distinct `session` values (lines without one are their own)
  double span_s = 0;      // the last line's t
  double makespan_s = 0;  // the trace's start → the last response's end
  // Wall clock (Unix seconds) at the trace's t = 0, so a run can be lined
  // up with what the server logged (switch windows).
  double started_unix_s = 0;
  // How far the latest send was behind its t (ms): the client's own lag,
  // which should stay near 0 (prompts are all built before the start).
  double worst_late_ms = 0;
  std::vector<PhaseReport> phases;
};

}  // namespace switchyard::bench
