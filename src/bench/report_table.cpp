#include "bench/report_table.h"

#include <fmt/format.h>

#include "bench/trace_workload.h"

namespace switchyard::bench {

namespace {

// The step's own columns: N (closed loop), or the offered and achieved
// arrival rates and the peak in flight (open loop); then the measurements.
constexpr const char* kClosedStep = "{:>7}";
constexpr const char* kOpenStep = "{:>8} {:>8} {:>6}";
constexpr const char* kRowFormat = " {:>5} {:>5} {:>10} {:>7} {:>21} {:>13} {:>8} {:>15} {:>16} {}";

std::string triple(const Summary& s) {
  return fmt::format("{:.0f}/{:.0f}/{:.0f}", s.p50, s.p90, s.p99);
}

std::string pair(const Summary& s, int decimals) {
  return fmt::format("{:.{}f}/{:.{}f}", s.p50, decimals, s.p99, decimals);
}

}  // namespace

std::string format_header(bool open_loop) {
  const std::string step = open_loop ? fmt::format(kOpenStep, "offered", "achieved", "peak N")
                                     : fmt::format(kClosedStep, "N");
  return step + fmt::format(kRowFormat, "req", "ok", "out tok/s", "req/s", "TTFT p50/p90/p99 ms",
                            "ITL p50/p99", "TPOT p50", "E2E p50/p99 ms", "self-reported", "errors");
}

std::string format_step_row(const StepReport& s) {
  std::string reported = "-";
  if (s.self_reported_tokens_per_s)
    reported =
        fmt::format("{:.0f}{}", *s.self_reported_tokens_per_s, s.inflated ? " INFLATED" : "");
  std::string errors;
  for (const auto& [kind, n] : s.errors)
    errors += fmt::format("{}{}={}", errors.empty() ? "" : " ", kind, n);
  if (s.short_outputs > 0)
    errors += fmt::format("{}short={}", errors.empty() ? "" : " ", s.short_outputs);
  if (s.interrupted) errors += errors.empty() ? "(interrupted)" : " (interrupted)";
  const std::string step =
      s.rate > 0 ? fmt::format(kOpenStep, fmt::format("{:g}/s", s.rate),
                               s.achieved_rate ? fmt::format("{:.2f}/s", *s.achieved_rate) : "-",
                               s.concurrency)
                 : fmt::format(kClosedStep, s.concurrency);
  return step + fmt::format(kRowFormat, s.requests, s.succeeded,
                            fmt::format("{:.1f}", s.output_tokens_per_s),
                            fmt::format("{:.2f}", s.requests_per_s), triple(s.ttft_ms),
                            pair(s.itl_ms, 1), fmt::format("{:.1f}", s.tpot_ms.p50),
                            pair(s.e2e_ms, 0), reported, errors.empty() ? "-" : errors);
}

std::string format_turns(const std::vector<TurnReport>& turns) {
  constexpr const char* kTurnFormat =
      "{:>7} {:>5} {:>5} {:>11} {:>11} {:>9} {:>22} {:>11} {:>10} {}";
  std::string out =
      fmt::format(kTurnFormat, "turn", "req", "ok", "prompt tok", "cached tok", "cached %",
                  "TTFT p50/p90/mean ms", "E2E p50 ms", "out tok/s", "errors") +
      "\n";
  for (const auto& t : turns) {
    std::string errors;
    for (const auto& [kind, n] : t.errors)
      errors += fmt::format("{}{}={}", errors.empty() ? "" : " ", kind, n);
    out += fmt::format(
               kTurnFormat, t.turn, t.requests, t.succeeded,
               fmt::format("{:.0f}", t.prompt_tokens.mean),
               t.cached_ratio ? fmt::format("{:.0f}", t.cached_tokens.mean) : std::string("-"),
               t.cached_ratio ? fmt::format("{:.1f}", *t.cached_ratio * 100) : std::string("-"),
               fmt::format("{:.0f}/{:.0f}/{:.0f}", t.ttft_ms.p50, t.ttft_ms.p90, t.ttft_ms.mean),
               fmt::format("{:.0f}", t.e2e_ms.p50), fmt::format("{:.1f}", t.output_tokens_per_s),
               errors.empty() ? "-" : errors) +
           "\n";
  }
  return out;
}

std::string format_table(const RunReport& run) {
  const auto& m = run.method;
  std::string out =
      m.workload == "trace" && run.trace
          ? fmt::format(
                "{}{} · model {} · {} · trace {}: {} requests, {} sessions over {:.1f} s · "
                "output forced\n",
                run.simulated ? "SIMULATED ENGINES · " : "", run.endpoint, run.model, m.api,
                run.trace->file, run.trace->requests, run.trace->sessions, run.trace->span_s)
      : m.workload == "agent"
          ? fmt::format(
                "{}{} · model {} · agent: {} sessions x {} turns · start {} · +{}-{}/turn · "
                "think {:g} s · output {} (forced)\n",
                run.simulated ? "SIMULATED ENGINES · " : "", run.endpoint, run.model, m.sessions,
                m.turns, m.start_context, m.turn_growth_min, m.turn_growth_max, m.think_time_s,
                m.output_len)
          : fmt::format("{}{} · model {} · {} · input {} · output {} (forced)\n",
                        run.simulated ? "SIMULATED ENGINES · " : "", run.endpoint, run.model, m.api,
                        m.input_len, m.output_len);
  out += format_header(m.loop == "open") + "\n";
  for (const auto& s : run.steps) out += format_step_row(s) + "\n";
  if (!run.turns.empty()) out += format_turns(run.turns);
  if (run.trace) out += format_trace(*run.trace);
  for (const auto& s : run.steps) {
    const std::string where =
        s.rate > 0 ? fmt::format("at {:g} req/s", s.rate) : fmt::format("at N={}", s.concurrency);
    if (s.inflated && s.self_report_ratio)
      out += fmt::format(
          "! {}: the engine's self-reported speed is {:.2f}x what was measured (inflated)\n", where,
          *s.self_report_ratio);
    if (s.prompt_off_target > 0)
      out += fmt::format(
          "! {}: {} of {} request(s) had a prompt other than {} tokens as the engine counted "
          "it (usage.prompt_tokens); the furthest off was {}\n",
          m.workload == "agent" ? std::string("in turn 1") : where, s.prompt_off_target,
          s.prompt_checked, s.worst_prompt_target, s.worst_prompt_tokens);
    if (s.short_outputs > 0)
      out +=
          fmt::format("! {}: {} request(s) produced fewer than {} tokens\n", where, s.short_outputs,
                      m.workload == "trace" ? std::string("their forced")
                                            : std::to_string(run.method.output_len));
    for (const auto& [kind, example] : s.error_examples)
      out += fmt::format("! {}: {} x {}: {}\n", where, s.errors.at(kind), kind, example);
  }
  for (const auto& note : run.notes) out += "note: " + note + "\n";
  return out;
}

}  // namespace switchyard::bench
