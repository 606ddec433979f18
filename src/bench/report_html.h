// A self-contained HTML report (no scripts, no external files) with inline
// SVG charts (bench/svg_chart.h): a chart per metric over the sweep with
// every run overlaid, each step's TTFT/ITL/TPOT/E2E distribution as a CDF,
// and the needle check's score grid as a heat map. The markup is well-formed
// XML (every element closed, text escaped) so tools and tests can parse it.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/run_report.h"
#include "bench/svg_chart.h"

namespace switchyard::bench {

// The needle check's mean score by context × depth, as `bench needle` scored it.
struct NeedleGrid {
  std::string label;  // names it in the report; "" for "endpoint model"
  std::string endpoint;
  std::string model;
  bool simulated = false;
  std::vector<long> contexts;
  std::vector<double> depths;
  std::map<std::pair<long, double>, double> scores;  // (context, depth) → mean over trials
};

// `labels[i]` names runs[i] in legends; an empty one falls back to the run's
// own label (--label), then to "endpoint model". `needles` are drawn after
// the runs, one heat map each.
std::string render_html(const std::vector<RunReport>& runs, const std::vector<std::string>& labels,
                        const std::vector<NeedleGrid>& needles = {});

}  // namespace switchyard::bench
