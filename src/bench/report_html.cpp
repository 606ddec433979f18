#include "bench/report_html.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

namespace switchyard::bench {

namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                   "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr std::size_t kColorCount = sizeof(kColors) / sizeof(kColors[0]);

using StepValue = std::function<double(const StepReport&)>;

double step_x(const RunReport& run, const StepReport& s) {
  return run.method.loop == "open" && s.rate > 0 ? s.rate : s.concurrency;
}

std::string step_name(const StepReport& s) {
  return s.rate > 0 ? fmt::format("{:g} req/s", s.rate) : fmt::format("N={}", s.concurrency);
}

// One series per run of `value` over its steps (steps that produced nothing
// are left out: a zero there is no measurement).
std::vector<ChartSeries> sweep_series(const std::vector<RunReport>& runs,
                                      const std::vector<std::string>& names, const StepValue& value,
                                      bool dashed, const std::string& suffix) {
  std::vector<ChartSeries> out;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    ChartSeries s;
    s.name = names[i] + suffix;
    s.run = static_cast<int>(i);
    s.color = kColors[i % kColorCount];
    s.dashed = dashed;
    for (const auto& step : runs[i].steps)
      if (step.succeeded > 0 || step.output_tokens_per_s > 0)
        s.points.emplace_back(step_x(runs[i], step), value(step));
    std::sort(s.points.begin(), s.points.end());
    out.push_back(std::move(s));
  }
  return out;
}

// A latency over the sweep: p50 solid and p99 dashed for every run.
std::string latency_sweep(const std::vector<RunReport>& runs, const std::vector<std::string>& names,
                          const std::string& title, const std::string& x_label,
                          Summary StepReport::*member) {
  LineChart c{title, x_label, "ms", {}, true, true, std::nullopt};
  c.series = sweep_series(
      runs, names, [member](const StepReport& s) { return (s.*member).p50; }, false, " p50");
  auto p99 = sweep_series(
      runs, names, [member](const StepReport& s) { return (s.*member).p99; }, true, " p99");
  c.series.insert(c.series.end(), p99.begin(), p99.end());
  return line_chart(c);
}

struct Distribution {
  const char* title;
  const char* x_label;
  const char* y_label;
  Summary StepReport::*member;
};

constexpr Distribution kDistributions[] = {
    {"TTFT distribution", "time to first token (ms)", "fraction of requests", &StepReport::ttft_ms},
    {"ITL distribution", "inter-token latency (ms)", "fraction of token gaps", &StepReport::itl_ms},
    {"TPOT distribution", "time per output token (ms)", "fraction of requests",
     &StepReport::tpot_ms},
    {"E2E distribution", "end-to-end latency (ms)", "fraction of requests", &StepReport::e2e_ms},
};

// Each step's empirical CDF of every latency, one chart per latency.
std::string distributions(const RunReport& run) {
  bool any = false;
  for (const auto& s : run.steps) any |= !s.ttft_ms.percentiles.empty();
  if (!any)
    return "<p class=\"note\">No distributions: this file holds no percentiles (written by an "
           "older switchyard, or no request succeeded).</p>\n";
  std::string out = "<div class=\"distributions\">\n";
  for (const auto& d : kDistributions) {
    LineChart c{d.title, d.x_label, d.y_label, {}, false, false, 1.0};
    for (std::size_t i = 0; i < run.steps.size(); ++i) {
      const auto& step = run.steps[i];
      ChartSeries s;
      s.name = step_name(step);
      s.run = static_cast<int>(i);
      s.color = kColors[i % kColorCount];
      s.points = cdf_points((step.*d.member).percentiles);
      if (!s.points.empty()) c.series.push_back(std::move(s));
    }
    out += line_chart(c);
  }
  return out + "</div>\n";
}

std::string summary_cells(const Summary& s) {
  return fmt::format("<td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td>", s.p50, s.p90, s.p99);
}

std::string run_section(const RunReport& run, const std::string& name) {
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
        "<tr><td>{}</td><td>{}</td><td>{}</td><td><b>{:.1f}</b></td><td>{:.2f}</td>{}{}"
        "<td>{:.1f}</td><td>{:.0f}</td><td>{}</td></tr>\n",
        s.rate > 0 ? step_name(s) : std::to_string(s.concurrency), s.requests, s.succeeded,
        s.output_tokens_per_s, s.requests_per_s, summary_cells(s.ttft_ms), summary_cells(s.itl_ms),
        s.tpot_ms.p50, s.e2e_ms.p50, reported);
  }
  t += "</table>\n";
  for (const auto& note : run.notes)
    t += fmt::format("<p class=\"note\">{}</p>\n", html_escape(note));
  return t + distributions(run);
}

std::string needle_section(const NeedleGrid& g) {
  const std::string name = g.label.empty() ? g.endpoint + " " + g.model : g.label;
  HeatMap m;
  m.title = "Needle retrieval score";
  m.x_label = "context (tokens)";
  m.y_label = "needle depth";
  for (long c : g.contexts) m.columns.push_back(std::to_string(c));
  for (double d : g.depths) {
    m.rows.push_back(fmt::format("{:g}%", d));
    std::vector<std::optional<double>> row;
    for (long c : g.contexts) {
      const auto it = g.scores.find({c, d});
      row.push_back(it == g.scores.end() ? std::nullopt : std::optional<double>(it->second));
    }
    m.cells.push_back(std::move(row));
  }
  std::string out = fmt::format("<h2>Needle check: {}</h2>\n<p class=\"meta\">{} · model {}</p>\n",
                                html_escape(name), html_escape(g.endpoint), html_escape(g.model));
  if (g.simulated)
    out +=
        "<p class=\"note\">Simulated engine: the simulator does not read the prompt, so "
        "these scores say nothing about the model.</p>\n";
  return out + heat_map(m);
}

}  // namespace

std::string render_html(const std::vector<RunReport>& runs, const std::vector<std::string>& labels,
                        const std::vector<NeedleGrid>& needles) {
  std::vector<std::string> names;
  bool simulated = false;
  bool open = false;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    std::string label = i < labels.size() ? labels[i] : std::string();
    if (label.empty()) label = runs[i].label;
    names.push_back(label.empty() ? runs[i].endpoint + " " + runs[i].model : label);
    simulated |= runs[i].simulated;
    open |= runs[i].method.loop == "open";
  }
  for (const auto& g : needles) simulated |= g.simulated;
  const std::string x_label = open ? "request rate (req/s)" : "concurrency (requests in flight)";
  const std::string title = simulated ? "switchyard bench (simulated engines)" : "switchyard bench";
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>" +
      html_escape(title) +
      "</title>\n<style>\n"
      "body{font-family:system-ui,sans-serif;margin:2em;max-width:1480px;color:#222}\n"
      "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;"
      "text-align:right}\n.charts,.distributions{display:flex;flex-wrap:wrap;gap:8px}\n"
      ".chart text{font-size:12px;fill:#333}.chart .title{font-size:14px;font-weight:bold}"
      ".chart .ytick{text-anchor:end}.chart .xtick,.chart .xlabel,.chart .ylabel,"
      ".chart .score{text-anchor:middle}.chart .axis{stroke:#333}.chart .grid{stroke:#eee}"
      ".chart .empty{fill:#f4f4f4;stroke:#ddd}\n"
      ".chart .legend{font-family:'DejaVu Sans Mono','Liberation Mono',monospace;"
      "font-size:12px}\n"
      ".banner{background:#fff3cd;border:1px solid #e0c060;padding:.5em 1em}\n"
      "</style>\n</head>\n<body>\n<h1>" +
      html_escape(title) + "</h1>\n";
  if (simulated)
    html +=
        "<p class=\"banner\">Simulated engines: these numbers come from switchyard's "
        "simulator and say nothing about real hardware.</p>\n";
  if (!runs.empty()) {
    html +=
        "<p>Output tokens per second is generated tokens / wall time of each step "
        "(forced output length, random-vocabulary prompts). TTFT, ITL, TPOT and E2E are "
        "defined in docs/bench.md; p50 is drawn solid, p99 dashed.</p>\n<div class=\"charts\">\n";
    const auto metric = [&](const char* chart_title, const char* unit, const StepValue& value) {
      LineChart c{chart_title, x_label, unit, {}, true, true, std::nullopt};
      c.series = sweep_series(runs, names, value, false, "");
      return line_chart(c);
    };
    html += metric("Output tokens/s", "tokens/s",
                   [](const StepReport& s) { return s.output_tokens_per_s; });
    html += latency_sweep(runs, names, "Time to first token", x_label, &StepReport::ttft_ms);
    html += latency_sweep(runs, names, "Inter-token latency", x_label, &StepReport::itl_ms);
    html += latency_sweep(runs, names, "Time per output token", x_label, &StepReport::tpot_ms);
    html += latency_sweep(runs, names, "End-to-end latency", x_label, &StepReport::e2e_ms);
    html +=
        metric("Requests/s", "requests/s", [](const StepReport& s) { return s.requests_per_s; });
    html += "</div>\n";
  }
  for (std::size_t i = 0; i < runs.size(); ++i) html += run_section(runs[i], names[i]);
  for (const auto& g : needles) html += needle_section(g);
  html += "</body>\n</html>\n";
  return html;
}

}  // namespace switchyard::bench
