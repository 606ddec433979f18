#include "bench/report_json.h"

#include <boost/json.hpp>

#include <cstdio>
#include <ctime>
#include <fstream>

#include <fmt/format.h>

#include "bench/trace_workload.h"
#include "common/json_text.h"

namespace switchyard::bench {

namespace json = boost::json;

namespace {

json::object summary_json(const Summary& s) {
  return json::object{{"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"mean", s.mean}};
}

// A latency summary keeps its percentiles too: `bench report` draws the
// step's CDF from a saved run.
json::object latency_json(const Summary& s) {
  json::object o = summary_json(s);
  json::array percentiles;
  for (double v : s.percentiles) percentiles.emplace_back(v);
  o["percentiles"] = std::move(percentiles);
  return o;
}

json::value optional_json(const std::optional<double>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

json::object step_json(const StepReport& s) {
  json::object errors;
  for (const auto& [kind, n] : s.errors) errors[kind] = n;
  json::object examples;
  for (const auto& [kind, text] : s.error_examples) examples[kind] = text;
  json::object o{
      {"concurrency", s.concurrency},
      {"rate", s.rate > 0 ? json::value(s.rate) : json::value(nullptr)},
      {"achieved_rate", optional_json(s.achieved_rate)},
      {"requests", s.requests},
      {"succeeded", s.succeeded},
      {"short_outputs", s.short_outputs},
      {"output_tokens", s.output_tokens},
      {"wall_s", s.wall_s},
      {"output_tokens_per_s", s.output_tokens_per_s},
      {"requests_per_s", s.requests_per_s},
      {"ttft_ms", latency_json(s.ttft_ms)},
      {"itl_ms", latency_json(s.itl_ms)},
      {"tpot_ms", latency_json(s.tpot_ms)},
      {"e2e_ms", latency_json(s.e2e_ms)},
      {"prompt_tokens", summary_json(s.prompt_tokens)},
      {"warmup", s.warmup},
      {"prompt_checked", s.prompt_checked},
      {"prompt_off_target", s.prompt_off_target},
      {"cached_tokens", s.cached_tokens >= 0 ? json::value(s.cached_tokens) : json::value(nullptr)},
      {"worst_prompt_tokens",
       s.worst_prompt_tokens >= 0 ? json::value(s.worst_prompt_tokens) : json::value(nullptr)},
      {"worst_prompt_target",
       s.worst_prompt_target >= 0 ? json::value(s.worst_prompt_target) : json::value(nullptr)},
      {"errors", std::move(errors)},
      {"error_examples", std::move(examples)},
      {"self_reported_tokens_per_s", optional_json(s.self_reported_tokens_per_s)},
      {"self_report_ratio", optional_json(s.self_report_ratio)},
      {"inflated", s.inflated},
      {"interrupted", s.interrupted}};
  return o;
}

json::object turn_json(const TurnReport& t) {
  json::object errors;
  for (const auto& [kind, n] : t.errors) errors[kind] = n;
  return json::object{{"turn", t.turn},
                      {"requests", t.requests},
                      {"succeeded", t.succeeded},
                      {"ttft_ms", summary_json(t.ttft_ms)},
                      {"e2e_ms", summary_json(t.e2e_ms)},
                      {"prompt_tokens", summary_json(t.prompt_tokens)},
                      {"cached_tokens", summary_json(t.cached_tokens)},
                      {"cached_ratio", optional_json(t.cached_ratio)},
                      {"output_tokens", t.output_tokens},
                      {"wall_s", t.wall_s},
                      {"output_tokens_per_s", t.output_tokens_per_s},
                      {"errors", std::move(errors)}};
}

json::object request_json(const RequestRecord& r) {
  const auto opt_long = [](long v) { return v >= 0 ? json::value(v) : json::value(nullptr); };
  const auto opt_ms = [](double v) { return v >= 0 ? json::value(v) : json::value(nullptr); };
  double itl_mean = 0;
  for (double g : r.itl_ms) itl_mean += g;
  if (!r.itl_ms.empty()) itl_mean /= static_cast<double>(r.itl_ms.size());
  json::object o{{"step", r.step},
                 {"index", r.index},
                 {"warmup", r.warmup},
                 {"start_s", r.start_s},
                 {"ttft_ms", opt_ms(r.ttft_ms)},
                 {"tpot_ms", opt_ms(r.tpot_ms())},
                 {"itl_mean_ms", r.itl_ms.empty() ? json::value(nullptr) : json::value(itl_mean)},
                 {"e2e_ms", r.e2e_ms},
                 {"prompt_tokens", opt_long(r.prompt_tokens)},
                 {"completion_tokens", opt_long(r.completion_tokens)},
                 {"content_chunks", r.content_chunks},
                 {"cached_tokens", opt_long(r.cached_tokens)},
                 {"self_reported_tokens_per_s", opt_ms(r.self_reported_tps)},
                 {"finish_reason", r.finish_reason},
                 {"short_output", r.short_output},
                 {"error", r.error.empty() ? json::value(nullptr) : json::value(r.error)},
                 {"error_detail", r.error_detail}};
  if (r.session >= 0) o["session"] = r.session;
  if (r.turn >= 0) o["turn"] = r.turn;
  if (!r.label.empty()) o["label"] = r.label;
  return o;
}

double number(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_number() ? v->to_number<double>() : 0.0;
}

Summary summary_from(const json::object& o, std::string_view key) {
  Summary s;
  const auto* v = o.if_contains(key);
  if (!v || !v->is_object()) return s;
  const auto& so = v->as_object();
  s.p50 = number(so, "p50");
  s.p90 = number(so, "p90");
  s.p99 = number(so, "p99");
  s.mean = number(so, "mean");
  if (const auto* p = so.if_contains("percentiles"); p && p->is_array())
    for (const auto& v : p->as_array())
      if (v.is_number()) s.percentiles.push_back(v.to_number<double>());
  return s;
}

std::string string_field(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

}  // namespace

std::string run_to_json(const RunReport& run) {
  const auto& m = run.method;
  json::object method{{"api", m.api},
                      {"input_len", m.input_len},
                      {"output_len", m.output_len},
                      {"prompt_mode", m.prompt_mode},
                      {"vocab_size", m.vocab_size},
                      {"loop", m.loop},
                      // null: one warm-up request per worker (steps[].warmup has the count)
                      {"warmup", m.warmup >= 0 ? json::value(m.warmup) : json::value(nullptr)},
                      {"requests_per_step", m.requests_per_step},
                      {"duration_s", m.duration_s},
                      {"burstiness", m.burstiness},
                      {"seed", m.seed},
                      {"salt", m.salt},
                      {"description", m.description},
                      {"workload", m.workload}};
  if (m.workload == "agent") {
    method["sessions"] = m.sessions;
    method["turns"] = m.turns;
    method["start_context"] = m.start_context;
    method["turn_growth"] = json::object{{"min", m.turn_growth_min}, {"max", m.turn_growth_max}};
    method["think_time_s"] = m.think_time_s;
  }
  json::array notes;
  for (const auto& n : run.notes) notes.emplace_back(n);
  json::array steps;
  for (const auto& s : run.steps) steps.push_back(step_json(s));
  json::array requests;
  for (const auto& r : run.requests) requests.push_back(request_json(r));
  json::object doc{{"endpoint", run.endpoint},       {"model", run.model},
                   {"method", std::move(method)},    {"started_at", run.started_at},
                   {"simulated", run.simulated},     {"interrupted", run.interrupted},
                   {"notes", std::move(notes)},      {"steps", std::move(steps)},
                   {"requests", std::move(requests)}};
  if (!run.label.empty()) doc["label"] = run.label;
  if (m.workload == "agent") {
    json::array turns;
    for (const auto& t : run.turns) turns.push_back(turn_json(t));
    doc["turns"] = std::move(turns);
  }
  if (run.trace) doc["trace"] = trace_json(*run.trace);
  return to_json_text(doc) + "\n";
}

Result<RunReport> run_from_json(const std::string& text, const std::string& source) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  if (ec) return Error{fmt::format("{}: not JSON ({})", source, ec.message())};
  if (!v.is_object()) return Error{fmt::format("{}: not a bench result (not an object)", source)};
  const auto& o = v.as_object();
  const auto* steps = o.if_contains("steps");
  if (!steps || !steps->is_array())
    return Error{fmt::format("{}: not a bench result (no steps[])", source)};
  RunReport run;
  run.label = string_field(o, "label");
  run.endpoint = string_field(o, "endpoint");
  run.model = string_field(o, "model");
  run.started_at = string_field(o, "started_at");
  if (const auto* s = o.if_contains("simulated"); s && s->is_bool()) run.simulated = s->as_bool();
  if (const auto* s = o.if_contains("interrupted"); s && s->is_bool())
    run.interrupted = s->as_bool();
  if (const auto* m = o.if_contains("method"); m && m->is_object()) {
    const auto& mo = m->as_object();
    run.method.api = string_field(mo, "api");
    run.method.input_len = static_cast<long>(number(mo, "input_len"));
    run.method.output_len = static_cast<long>(number(mo, "output_len"));
    run.method.loop = string_field(mo, "loop");
    run.method.description = string_field(mo, "description");
    if (auto w = string_field(mo, "workload"); !w.empty()) run.method.workload = w;
  }
  for (const auto& sv : steps->as_array()) {
    if (!sv.is_object()) return Error{fmt::format("{}: steps[] holds a non-object", source)};
    const auto& so = sv.as_object();
    StepReport s;
    s.concurrency = static_cast<int>(number(so, "concurrency"));
    s.rate = number(so, "rate");
    if (const auto* a = so.if_contains("achieved_rate"); a && a->is_number())
      s.achieved_rate = a->to_number<double>();
    s.requests = static_cast<long>(number(so, "requests"));
    s.succeeded = static_cast<long>(number(so, "succeeded"));
    s.output_tokens_per_s = number(so, "output_tokens_per_s");
    s.requests_per_s = number(so, "requests_per_s");
    s.ttft_ms = summary_from(so, "ttft_ms");
    s.itl_ms = summary_from(so, "itl_ms");
    s.tpot_ms = summary_from(so, "tpot_ms");
    s.e2e_ms = summary_from(so, "e2e_ms");
    if (const auto* r = so.if_contains("self_reported_tokens_per_s"); r && r->is_number())
      s.self_reported_tokens_per_s = r->to_number<double>();
    run.steps.push_back(std::move(s));
  }
  return run;
}

Result<bool> write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) return Error{fmt::format("cannot write {}", tmp)};
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Error{fmt::format("cannot rename {} to {}", tmp, path)};
  }
  return true;
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace switchyard::bench
