// Inline SVG charts for the bench's HTML report: line charts (a metric over
// the sweep, a latency CDF) and a heat map (the needle grid). Written
// directly rather than with uPlot so the report needs no script, stays
// well-formed XML that tests parse, and prints as it shows. Legends sit
// below the plot in a monospace font and wrap, so no label is ever clipped.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace switchyard::bench {

// Round axis ticks: multiples of 1, 2 or 5 × 10^k covering [lo, hi] with
// about `target` intervals. values.front() ≤ lo and values.back() ≥ hi, so
// the axis can run from tick to tick.
struct Ticks {
  double step = 1;
  std::vector<double> values;
};
Ticks nice_ticks(double lo, double hi, int target = 5);

// A tick's text with as many decimals as the step needs: step 0.05 → "0.15",
// step 50 → "150".
std::string tick_label(double value, double step);

// The steps of an empirical CDF from the 0th..100th percentiles (stats.h's
// Summary::percentiles): (value, fraction of the sample ≤ value) with one
// point per distinct value, ascending. Empty for an empty sample.
std::vector<std::pair<double, double>> cdf_points(const std::vector<double>& percentiles);

// `text` broken into lines of at most `max_chars` characters, preferring a
// break after a space, '-', '_', '/' or '.'; a UTF-8 sequence is never split.
std::vector<std::string> wrap_label(std::string_view text, std::size_t max_chars);

struct ChartSeries {
  std::string name;  // legend text
  int run = 0;       // index of the run it belongs to (data-run)
  std::string color;
  bool dashed = false;
  std::vector<std::pair<double, double>> points;  // (x, y), x ascending
};

struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<ChartSeries> series;
  // Sweep charts: ticks at the x values measured (concurrency 1, 2, 4, 8), on
  // a log2 scale when they span a factor of 4 or more. Otherwise round ticks.
  bool x_at_data = false;
  bool markers = true;          // a dot with a tooltip at each point; off for a CDF (101 points)
  std::optional<double> y_max;  // fixed top of the y axis (1 for a CDF)
};

std::string line_chart(const LineChart& chart);

// Rows × columns of scores in [0, 1]; a missing cell is drawn empty.
struct HeatMap {
  std::string title;
  std::string x_label, y_label;
  std::vector<std::string> columns;                       // left to right
  std::vector<std::string> rows;                          // top to bottom
  std::vector<std::vector<std::optional<double>>> cells;  // [row][column]
};

std::string heat_map(const HeatMap& map);

// The heat map's colour for a score: red at 0, amber at 0.5, green at 1.
std::string score_color(double score);

// `text` with & < > " ' escaped.
std::string html_escape(std::string_view text);

}  // namespace switchyard::bench
