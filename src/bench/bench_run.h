// `switchyard bench` and `switchyard bench report`: from options to a table,
// JSON and HTML. Returns the process exit status.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_options.h"

namespace switchyard::bench {

// Probes the endpoint, runs every step, prints the table, writes the files.
// 0: every measured request succeeded at the forced length; 1: an error,
// failed or short requests; 2: bad options; 130: interrupted (the partial
// results are written).
int run_bench(const BenchOptions& options);

// Overlays the runs in `json_files` (bench and needle results) into one HTML
// report at `html_path`; `labels[i]`, when given, names the i-th file's run.
int run_report(const std::vector<std::string>& json_files, const std::vector<std::string>& labels,
               const std::string& html_path);

}  // namespace switchyard::bench
