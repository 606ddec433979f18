// A self-contained HTML report (no scripts, no external files) with inline
// SVG charts: output tok/s, TTFT and ITL percentiles against concurrency.
// Several runs overlay as one series each. The markup is well-formed XML
// (every element closed, text escaped) so tools and tests can parse it.
#pragma once

#include <string>
#include <vector>

#include "bench/run_report.h"

namespace switchyard::bench {

// `labels[i]` names runs[i] in legends (e.g. its file name); empty labels
// fall back to "endpoint model".
std::string render_html(const std::vector<RunReport>& runs, const std::vector<std::string>& labels);

// `text` with & < > " ' escaped.
std::string html_escape(std::string_view text);

}  // namespace switchyard::bench
