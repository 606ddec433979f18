// The terminal view of a run: one row per step, then what to notice.
#pragma once

#include <string>
#include <vector>

#include "bench/run_report.h"

namespace switchyard::bench {

// The header line and one row per step, aligned; then a line per inflated
// self-report, short output or error kind.
std::string format_table(const RunReport& run);

// The column headings of format_step_row (an open loop's show the offered
// and achieved arrival rates where a closed loop's show N).
std::string format_header(bool open_loop = false);

// The agent workload's per-turn table: prompt and cached tokens, the cached
// share, TTFT p50/p90/mean, E2E p50, tokens/wall, errors.
std::string format_turns(const std::vector<TurnReport>& turns);

// One step's row alone (same columns), for the plain per-step line.
std::string format_step_row(const StepReport& step);

}  // namespace switchyard::bench
