// A synthetic day for `--workload trace` (`switchyard bench make-trace`):
// the field reports' day on a box of two cards, compressed. A chat trickle
// runs all day (a few chats whose context grows turn by turn); at `burst_at` a batch job sends
// `burst_requests` requests at once; at `cold_at` a huge cold prompt
// arrives (a 130K-token document). Deterministic by seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/trace_workload.h"
#include "common/result.h"

namespace switchyard::bench {

struct DayOptions {
  std::uint64_t seed = 0;
  // Every time (and the day's length) is divided by this: 10 for engines run
  // at --speed-factor 10. Must be > 0.
  double compress = 1;
  double duration_s = 1800;  // the trickle runs over [0, duration)
  // The trickle: this many chats at once; a chat's turns come an exponential
  // gap apart (mean `trickle_gap_s`); its first prompt is `trickle_input`
  // tokens and each later one re-sends the last plus its answer plus
  // `trickle_growth`; after `trickle_turns` turns a new chat takes its place.
  int trickle_sessions = 3;
  double trickle_gap_s = 40;
  long trickle_input = 1024;
  long trickle_growth = 384;
  long trickle_output = 128;
  int trickle_turns = 8;
  // The burst: requests sent at the same instant, each its own session. 0: none.
  double burst_at_s = 600;
  int burst_requests = 16;
  long burst_input = 2048;
  long burst_output = 256;
  // Cold prompts: `cold_requests` huge prompts, `cold_gap_s` apart. 0: none.
  double cold_at_s = 1000;
  int cold_requests = 1;
  double cold_gap_s = 30;
  long cold_input = 130000;
  long cold_output = 256;
};

// Checks ranges; the error names the flag.
Result<bool> validate(const DayOptions& o);

// The day's entries, ordered by t. Precondition: validate(o).
std::vector<TraceEntry> make_day(const DayOptions& o);

// `switchyard bench make-trace`: writes the day to `out_path` ("" or "-":
// stdout). Returns the exit status (2: bad options, 1: cannot write).
int run_make_trace(const DayOptions& o, const std::string& out_path);

}  // namespace switchyard::bench
