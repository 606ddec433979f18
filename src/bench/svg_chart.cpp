#include "bench/svg_chart.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace switchyard::bench {

namespace {

constexpr int kWidth = 680;  // two side by side on a 1440 px page
constexpr int kLeft = 72;
constexpr int kRight = 24;
constexpr int kTop = 34;
constexpr int kPlotHeight = 230;
constexpr int kAxisRoom = 58;  // x ticks and the x label under the plot
constexpr int kLegendLine = 16;
// The legend's monospace 12 px glyphs are 0.6 em wide in DejaVu Sans Mono and
// Liberation Mono; 0.65 em leaves room for wider fallbacks.
constexpr double kLegendCharWidth = 12 * 0.65;
constexpr int kLegendTextX = 40;  // after the swatch

std::size_t legend_chars() {
  return static_cast<std::size_t>((kWidth - kLeft - kLegendTextX - kRight) / kLegendCharWidth);
}

std::string number(double v) {
  return fmt::format("{:g}", v);
}

struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  std::vector<std::pair<double, std::string>> ticks;  // (value, label)
  double pos(double v) const { return log ? std::log2(v) : v; }
  // Where `v` falls in [0, 1] along the axis.
  double frac(double v) const {
    const double a = pos(lo), b = pos(hi);
    return b > a ? (pos(v) - a) / (b - a) : 0.5;
  }
};

Axis round_axis(double lo, double hi) {
  Axis axis;
  const Ticks t = nice_ticks(lo, hi);
  axis.lo = t.values.front();
  axis.hi = t.values.back();
  for (double v : t.values) axis.ticks.emplace_back(v, tick_label(v, t.step));
  return axis;
}

// Sweep x: the measured values themselves are the ticks.
Axis data_axis(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  if (xs.empty()) return round_axis(0, 1);
  if (xs.size() == 1) {
    Axis axis = round_axis(0, 2 * xs.front());
    axis.ticks = {{xs.front(), number(xs.front())}};
    return axis;
  }
  Axis axis;
  axis.lo = xs.front();
  axis.hi = xs.back();
  axis.log = xs.front() > 0 && xs.back() / xs.front() >= 4;
  for (double x : xs) axis.ticks.emplace_back(x, number(x));
  return axis;
}

std::string svg_open(int height, const std::string& title) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" role=\"img\">\n<title>{2}</title>\n"
      "<text x=\"{3}\" y=\"20\" class=\"title\">{2}</text>\n",
      kWidth, height, html_escape(title), kLeft);
}

}  // namespace

Ticks nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) {  // one value (or none): a unit around it
    const double pad = lo == 0 ? 1 : std::abs(lo) / 2;
    lo -= pad;
    hi += pad;
  }
  if (lo < 0 && lo + (hi - lo) * 0.01 >= 0) lo = 0;
  const double raw = (hi - lo) / std::max(target, 1);
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  double step = magnitude * 10;
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * magnitude * (1 + 1e-9)) {
      step = m * magnitude;
      break;
    }
  Ticks t;
  t.step = step;
  const double first = std::floor(lo / step + 1e-9);
  const double last = std::ceil(hi / step - 1e-9);
  for (double i = first; i <= last; ++i) {
    const double v = i * step;
    t.values.push_back(std::abs(v) < step * 1e-9 ? 0 : v);  // no "-0"
  }
  return t;
}

std::string tick_label(double value, double step) {
  const int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
  return fmt::format("{:.{}f}", value, decimals);
}

std::vector<std::pair<double, double>> cdf_points(const std::vector<double>& percentiles) {
  std::vector<std::pair<double, double>> out;
  if (percentiles.size() < 2) return out;
  const double last = static_cast<double>(percentiles.size() - 1);
  for (std::size_t i = 0; i < percentiles.size(); ++i) {
    const double fraction = static_cast<double>(i) / last;
    if (!out.empty() && out.back().first == percentiles[i])
      out.back().second = fraction;  // a repeated value: the step's top
    else
      out.emplace_back(percentiles[i], fraction);
  }
  return out;
}

std::vector<std::string> wrap_label(std::string_view text, std::size_t max_chars) {
  std::vector<std::string> lines;
  max_chars = std::max<std::size_t>(max_chars, 1);
  // Characters, not bytes: a UTF-8 continuation byte belongs to its lead.
  std::vector<std::string_view> chars;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = 1;
    while (i + n < text.size() && (static_cast<unsigned char>(text[i + n]) & 0xC0) == 0x80) ++n;
    chars.push_back(text.substr(i, n));
    i += n;
  }
  std::size_t begin = 0;
  while (chars.size() - begin > max_chars) {
    std::size_t cut = begin + max_chars;
    for (std::size_t j = begin + max_chars; j > begin + max_chars / 2; --j) {
      const std::string_view c = chars[j - 1];
      if (c == " " || c == "-" || c == "_" || c == "/" || c == ".") {
        cut = j;
        break;
      }
    }
    std::string line;
    for (std::size_t j = begin; j < cut; ++j) line += chars[j];
    while (!line.empty() && line.back() == ' ') line.pop_back();
    lines.push_back(std::move(line));
    begin = cut;
  }
  std::string rest;
  for (std::size_t j = begin; j < chars.size(); ++j) rest += chars[j];
  if (!rest.empty() || lines.empty()) lines.push_back(std::move(rest));
  return lines;
}

std::string line_chart(const LineChart& c) {
  std::vector<double> xs;
  double y_top = 0;
  for (const auto& s : c.series)
    for (const auto& [x, y] : s.points) {
      xs.push_back(x);
      y_top = std::max(y_top, y);
    }
  Axis x_axis;
  if (c.x_at_data) {
    x_axis = data_axis(xs);
  } else {
    const auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
    x_axis = xs.empty() ? round_axis(0, 1) : round_axis(std::min(0.0, *lo), *hi);
  }
  const Axis y_axis = round_axis(0, c.y_max.value_or(y_top > 0 ? y_top : 1));

  std::vector<std::vector<std::string>> legend;
  int legend_lines = 0;
  for (const auto& s : c.series) {
    legend.push_back(wrap_label(s.name, legend_chars()));
    legend_lines += static_cast<int>(legend.back().size());
  }
  const int legend_top = kTop + kPlotHeight + kAxisRoom;
  const int height = legend_top + legend_lines * kLegendLine + 8;
  const double plot_w = kWidth - kLeft - kRight;
  const auto px = [&](double x) { return kLeft + x_axis.frac(x) * plot_w; };
  const auto py = [&](double y) { return kTop + kPlotHeight - y_axis.frac(y) * kPlotHeight; };

  std::string svg = svg_open(height, c.title);
  for (const auto& [v, label] : y_axis.ticks)
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" class=\"grid\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" class=\"ytick\">{5}</text>\n",
        kLeft, py(v), kLeft + plot_w, kLeft - 6, py(v) + 4, label);
  for (const auto& [v, label] : x_axis.ticks)
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" class=\"axis\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" class=\"xtick\">{4}</text>\n",
        px(v), kTop + kPlotHeight, kTop + kPlotHeight + 5, kTop + kPlotHeight + 18, label);
  svg += fmt::format(
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" class=\"axis\"/>"
      "<line x1=\"{0}\" y1=\"{2}\" x2=\"{3:.1f}\" y2=\"{2}\" class=\"axis\"/>\n"
      "<text x=\"{4:.1f}\" y=\"{5}\" class=\"xlabel\">{6}</text>\n"
      "<text x=\"14\" y=\"{7:.1f}\" class=\"ylabel\" transform=\"rotate(-90 14 {7:.1f})\">{8}"
      "</text>\n",
      kLeft, kTop, kTop + kPlotHeight, kLeft + plot_w, kLeft + plot_w / 2, kTop + kPlotHeight + 36,
      html_escape(c.x_label), kTop + kPlotHeight / 2.0, html_escape(c.y_label));

  int line = 0;
  for (std::size_t i = 0; i < c.series.size(); ++i) {
    const auto& s = c.series[i];
    const std::string dash = s.dashed ? " stroke-dasharray=\"6 4\"" : "";
    std::string points;
    for (const auto& [x, y] : s.points) points += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    if (!points.empty()) points.pop_back();
    svg += fmt::format(
        "<g class=\"series\" data-run=\"{}\" data-name=\"{}\"><polyline points=\"{}\" "
        "fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>",
        s.run, html_escape(s.name), points, s.color, dash);
    if (c.markers)
      for (const auto& [x, y] : s.points)
        svg += fmt::format(
            "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}: {} at {}</title>"
            "</circle>",
            px(x), py(y), s.color, html_escape(s.name), number(y), number(x));
    svg += "</g>\n";
    const int y0 = legend_top + line * kLegendLine;
    svg += fmt::format(
        "<g class=\"legend-entry\"><line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" "
        "stroke=\"{3}\" stroke-width=\"2\"{4}/><text x=\"{5}\" y=\"{6}\" class=\"legend\">",
        kLeft, y0 - 4, kLeft + kLegendTextX - 8, s.color, dash, kLeft + kLegendTextX, y0);
    for (std::size_t k = 0; k < legend[i].size(); ++k)
      svg += fmt::format("<tspan x=\"{}\" dy=\"{}\">{}</tspan>", kLeft + kLegendTextX,
                         k == 0 ? 0 : kLegendLine, html_escape(legend[i][k]));
    svg += "</text></g>\n";
    line += static_cast<int>(legend[i].size());
  }
  svg += "</svg>\n";
  return svg;
}

std::string score_color(double score) {
  score = std::clamp(score, 0.0, 1.0);
  // Two linear ramps: #d73027 → #fdae61 → #1a9850.
  struct Rgb {
    double r, g, b;
  };
  constexpr Rgb lo{0xd7, 0x30, 0x27}, mid{0xfd, 0xae, 0x61}, hi{0x1a, 0x98, 0x50};
  const Rgb& a = score < 0.5 ? lo : mid;
  const Rgb& b = score < 0.5 ? mid : hi;
  const double t = score < 0.5 ? score * 2 : (score - 0.5) * 2;
  const auto mix = [t](double x, double y) {
    return static_cast<int>(std::lround(x + (y - x) * t));
  };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(a.r, b.r), mix(a.g, b.g), mix(a.b, b.b));
}

std::string heat_map(const HeatMap& m) {
  constexpr int kCell = 64, kCellH = 34, kLeftMap = 110;
  const int top = kTop + 18;  // room for the row axis's name
  const int cols = static_cast<int>(m.columns.size());
  const int rows = static_cast<int>(m.rows.size());
  const int grid_w = cols * kCell;
  const int width = std::max(kLeftMap + grid_w + 24, 360);
  const int scale_top = top + rows * kCellH + 48;
  const int height = scale_top + 34;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart heatmap\" width=\"{0}\" "
      "height=\"{1}\" viewBox=\"0 0 {0} {1}\" role=\"img\">\n<title>{2}</title>\n"
      "<text x=\"{3}\" y=\"20\" class=\"title\">{2}</text>\n",
      width, height, html_escape(m.title), 10);
  for (int r = 0; r < rows; ++r) {
    const int y = top + r * kCellH;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"ytick\">{}</text>\n", kLeftMap - 6,
                       y + kCellH / 2 + 4, html_escape(m.rows[r]));
    for (int col = 0; col < cols; ++col) {
      const int x = kLeftMap + col * kCell;
      const auto& cell = m.cells.at(r).at(col);
      if (!cell) {
        svg += fmt::format(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"cell empty\"/>\n", x, y,
            kCell, kCellH);
        continue;
      }
      svg += fmt::format(
          "<g class=\"cell\" data-score=\"{0:.3f}\"><rect x=\"{1}\" y=\"{2}\" width=\"{3}\" "
          "height=\"{4}\" fill=\"{5}\"><title>{6} × {7}: {0:.2f}</title></rect>"
          "<text x=\"{8}\" y=\"{9}\" class=\"score\">{0:.2f}</text></g>\n",
          *cell, x, y, kCell, kCellH, score_color(*cell), html_escape(m.rows[r]),
          html_escape(m.columns[col]), x + kCell / 2, y + kCellH / 2 + 4);
    }
  }
  for (int col = 0; col < cols; ++col)
    svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"xtick\">{}</text>\n",
                       kLeftMap + col * kCell + kCell / 2, top + rows * kCellH + 16,
                       html_escape(m.columns[col]));
  // The row axis's name sits over the row labels: a rotated one would
  // outgrow a grid of one or two rows.
  svg += fmt::format(
      "<text x=\"{}\" y=\"{}\" class=\"xlabel\">{}</text>\n"
      "<text x=\"{}\" y=\"{}\" class=\"ytick\">{}</text>\n",
      kLeftMap + grid_w / 2, top + rows * kCellH + 34, html_escape(m.x_label), kLeftMap - 6,
      top - 8, html_escape(m.y_label));
  // The colour scale: what red and green mean.
  for (int i = 0; i <= 10; ++i)
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"16\" height=\"10\" fill=\"{}\"/>",
                       kLeftMap + i * 16, scale_top, score_color(i / 10.0));
  svg += fmt::format(
      "\n<text x=\"{}\" y=\"{}\" class=\"ytick\">score 0</text>"
      "<text x=\"{}\" y=\"{}\" class=\"legend\">1</text>\n</svg>\n",
      kLeftMap - 6, scale_top + 9, kLeftMap + 11 * 16 + 4, scale_top + 9);
  return svg;
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace switchyard::bench
