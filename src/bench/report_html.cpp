#include "bench/report_html.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

namespace switchyard::bench {

namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                   "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr int kWidth = 640;
constexpr int kHeight = 320;
constexpr int kLeft = 70;
constexpr int kRight = 150;  // room for the legend
constexpr int kTop = 40;
constexpr int kBottom = 50;

struct Series {
  std::string name;  // legend text
  int run = 0;       // index of the run it belongs to
  std::string color;
  bool dashed = false;
  std::vector<std::pair<double, double>> points;  // (x, y), x ascending
};

// Human tick labels: 1234.5 → "1235", 0.25 → "0.25".
std::string tick(double v) {
  if (v >= 100 || v == std::floor(v)) return fmt::format("{:.0f}", v);
  if (v >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

// One line chart. x is drawn on a log2 scale when every x is positive and
// they span a factor of 4 or more (concurrency 1, 2, 4, 8 evenly spaced).
std::string chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                  const std::vector<Series>& series, bool simulated) {
  std::vector<double> xs;
  double y_max = 0;
  for (const auto& s : series)
    for (const auto& [x, y] : s.points) {
      xs.push_back(x);
      y_max = std::max(y_max, y);
    }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  const bool log_x = !xs.empty() && xs.front() > 0 && xs.back() / xs.front() >= 4;
  const auto fx = [&](double x) { return log_x ? std::log2(x) : x; };
  const double x_lo = xs.empty() ? 0 : fx(xs.front());
  double x_hi = xs.empty() ? 1 : fx(xs.back());
  if (x_hi <= x_lo) x_hi = x_lo + 1;
  if (y_max <= 0) y_max = 1;
  y_max *= 1.1;
  const double plot_w = kWidth - kLeft - kRight;
  const double plot_h = kHeight - kTop - kBottom;
  const auto px = [&](double x) { return kLeft + (fx(x) - x_lo) / (x_hi - x_lo) * plot_w; };
  const auto py = [&](double y) { return kTop + plot_h - y / y_max * plot_h; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" role=\"img\">\n",
      kWidth, kHeight, kWidth, kHeight);
  std::string full_title = simulated ? title + " (simulated engines)" : title;
  svg += fmt::format("<title>{}</title>\n", html_escape(full_title));
  svg += fmt::format("<text x=\"{}\" y=\"20\" class=\"title\">{}</text>\n", kLeft,
                     html_escape(full_title));
  // Axes, grid and ticks.
  svg += fmt::format(
      "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" class=\"axis\"/>\n"
      "<line x1=\"{0}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\" class=\"axis\"/>\n",
      kLeft, kTop, kTop + plot_h, kLeft + plot_w);
  for (int i = 0; i <= 5; ++i) {
    const double v = y_max * i / 5;
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" class=\"grid\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" class=\"ytick\">{5}</text>\n",
        kLeft, py(v), kLeft + plot_w, kLeft - 6, py(v) + 4, tick(v));
  }
  for (double x : xs)
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" class=\"xtick\">{}</text>\n", px(x),
                       kTop + plot_h + 16, tick(x));
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" class=\"xlabel\">{}</text>\n", kLeft + plot_w / 2,
                     kHeight - 8, html_escape(x_label));
  svg += fmt::format(
      "<text x=\"14\" y=\"{:.1f}\" class=\"ylabel\" transform=\"rotate(-90 14 "
      "{:.1f})\">{}</text>\n",
      kTop + plot_h / 2, kTop + plot_h / 2, html_escape(y_label));
  // One polyline (and its points) per series; the legend on the right.
  int legend_y = kTop + 6;
  for (const auto& s : series) {
    std::string points;
    for (const auto& [x, y] : s.points) points += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    if (!points.empty()) points.pop_back();
    svg += fmt::format(
        "<g class=\"series\" data-run=\"{}\" data-name=\"{}\">"
        "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{}/>",
        s.run, html_escape(s.name), points, s.color, s.dashed ? " stroke-dasharray=\"6 4\"" : "");
    for (const auto& [x, y] : s.points)
      svg += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}: {} at "
          "{}</title></circle>",
          px(x), py(y), s.color, html_escape(s.name), tick(y), tick(x));
    svg += "</g>\n";
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"2\"{4}/>"
        "<text x=\"{5}\" y=\"{6}\" class=\"legend\">{7}</text>\n",
        kLeft + plot_w + 10, legend_y, kLeft + plot_w + 30, s.color,
        s.dashed ? " stroke-dasharray=\"6 4\"" : "", kLeft + plot_w + 34, legend_y + 4,
        html_escape(s.name));
    legend_y += 16;
  }
  svg += "</svg>\n";
  return svg;
}

double step_x(const RunReport& run, const StepReport& s) {
  return run.method.loop == "open" && s.rate > 0 ? s.rate : s.concurrency;
}

std::vector<Series> series_of(const std::vector<RunReport>& runs,
                              const std::vector<std::string>& names,
                              const std::function<double(const StepReport&)>& value, bool dashed,
                              const std::string& suffix) {
  std::vector<Series> out;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    Series s;
    s.name = names[i] + suffix;
    s.run = static_cast<int>(i);
    s.color = kColors[i % (sizeof(kColors) / sizeof(kColors[0]))];
    s.dashed = dashed;
    for (const auto& step : runs[i].steps)
      if (step.succeeded > 0 || step.output_tokens_per_s > 0)
        s.points.emplace_back(step_x(runs[i], step), value(step));
    std::sort(s.points.begin(), s.points.end());
    out.push_back(std::move(s));
  }
  return out;
}

std::string summary_cells(const Summary& s) {
  return fmt::format("<td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td>", s.p50, s.p90, s.p99);
}

std::string run_table(const RunReport& run, const std::string& name) {
  std::string t = fmt::format("<h2>{}</h2>\n<p class=\"meta\">{} · model {} · started {}{}</p>\n",
                              html_escape(name), html_escape(run.endpoint), html_escape(run.model),
                              html_escape(run.started_at),
                              run.interrupted ? " · <b>interrupted: partial results</b>" : "");
  if (!run.method.description.empty())
    t += fmt::format("<p class=\"method\">{}</p>\n", html_escape(run.method.description));
  t += "<table>\n<tr><th>N</th><th>req</th><th>ok</th><th>output tok/s</th><th>req/s</th>"
       "<th>TTFT p50</th><th>p90</th><th>p99</th><th>ITL p50</th><th>p90</th><th>p99</th>"
       "<th>TPOT p50</th><th>E2E p50</th><th>self-reported tok/s</th></tr>\n";
  for (const auto& s : run.steps) {
    std::string reported = "–";
    if (s.self_reported_tokens_per_s)
      reported =
          fmt::format("{:.0f}{}", *s.self_reported_tokens_per_s, s.inflated ? " (inflated)" : "");
    t += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td><b>{:.1f}</b></td><td>{:.2f}</td>{}{}<td>{:.1f}</"
        "td>"
        "<td>{:.0f}</td><td>{}</td></tr>\n",
        s.rate > 0 ? fmt::format("{} req/s", tick(s.rate)) : std::to_string(s.concurrency),
        s.requests, s.succeeded, s.output_tokens_per_s, s.requests_per_s, summary_cells(s.ttft_ms),
        summary_cells(s.itl_ms), s.tpot_ms.p50, s.e2e_ms.p50, reported);
  }
  t += "</table>\n";
  for (const auto& note : run.notes)
    t += fmt::format("<p class=\"note\">{}</p>\n", html_escape(note));
  return t;
}

}  // namespace

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

std::string render_html(const std::vector<RunReport>& runs,
                        const std::vector<std::string>& labels) {
  std::vector<std::string> names;
  bool simulated = false;
  bool open = false;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    std::string label = i < labels.size() ? labels[i] : std::string();
    names.push_back(label.empty() ? runs[i].endpoint + " " + runs[i].model : label);
    simulated |= runs[i].simulated;
    open |= runs[i].method.loop == "open";
  }
  const std::string x_label = open ? "request rate (req/s)" : "concurrency (requests in flight)";
  const std::string title = simulated ? "switchyard bench (simulated engines)" : "switchyard bench";
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>" +
      html_escape(title) +
      "</title>\n<style>\n"
      "body{font-family:system-ui,sans-serif;margin:2em;max-width:1000px;color:#222}\n"
      "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;"
      "text-align:right}\n.chart text{font-size:12px;fill:#333}.chart .title{font-size:14px;"
      "font-weight:bold}.chart .ytick{text-anchor:end}.chart .xtick,.chart .xlabel,"
      ".chart .ylabel{text-anchor:middle}.chart .axis{stroke:#333}.chart .grid{stroke:#eee}\n"
      ".banner{background:#fff3cd;border:1px solid #e0c060;padding:.5em 1em}\n"
      "</style>\n</head>\n<body>\n<h1>" +
      html_escape(title) + "</h1>\n";
  if (simulated)
    html +=
        "<p class=\"banner\">Simulated engines: these numbers come from switchyard's "
        "simulator and say nothing about real hardware.</p>\n";
  html +=
      "<p>Output tokens per second is generated tokens / wall time of each step "
      "(forced output length, random-vocabulary prompts). TTFT, ITL and TPOT are "
      "defined in docs/bench.md.</p>\n";
  html +=
      chart("Output tokens/s", x_label, "tokens/s",
            series_of(
                runs, names, [](const StepReport& s) { return s.output_tokens_per_s; }, false, ""),
            simulated);
  auto ttft = series_of(
      runs, names, [](const StepReport& s) { return s.ttft_ms.p50; }, false, " p50");
  auto ttft99 = series_of(
      runs, names, [](const StepReport& s) { return s.ttft_ms.p99; }, true, " p99");
  ttft.insert(ttft.end(), ttft99.begin(), ttft99.end());
  html += chart("Time to first token", x_label, "ms", ttft, simulated);
  auto itl = series_of(
      runs, names, [](const StepReport& s) { return s.itl_ms.p50; }, false, " p50");
  auto itl99 = series_of(
      runs, names, [](const StepReport& s) { return s.itl_ms.p99; }, true, " p99");
  itl.insert(itl.end(), itl99.begin(), itl99.end());
  html += chart("Inter-token latency", x_label, "ms", itl, simulated);
  for (std::size_t i = 0; i < runs.size(); ++i) html += run_table(runs[i], names[i]);
  html += "</body>\n</html>\n";
  return html;
}

}  // namespace switchyard::bench
