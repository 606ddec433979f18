// The run as JSON (`--json FILE`), and back (for `bench report`).
#pragma once

#include <string>

#include "bench/run_report.h"
#include "common/result.h"

namespace switchyard::bench {

// The document docs/bench.md describes: endpoint, model, method, started_at,
// simulated, interrupted, notes, steps[], requests[].
std::string run_to_json(const RunReport& run);

// Reads what run_to_json wrote (requests[] is skipped: reports need steps).
// The error names the file and what is wrong.
Result<RunReport> run_from_json(const std::string& text, const std::string& source);

// Writes `text` to `path` through a temporary file and a rename, so an
// interrupted run never leaves half a file.
Result<bool> write_file_atomically(const std::string& path, const std::string& text);

// Now, as reports write started_at: "2026-11-30T03:56:49Z".
std::string utc_now_iso8601();

}  // namespace switchyard::bench
