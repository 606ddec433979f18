#include "bench/trace_workload.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <random>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/json_text.h"
#include "http/use_tuple.h"

namespace switchyard::bench {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::awaitable;

namespace {

// /tokenize calls per prompt before settling for the closest prefix below.
constexpr int kMaxCountCalls = 24;

// A whole number >= 1 (a JSON integer, or a double without a fraction, as
// JSON writers emit counts).
std::optional<long> count_field(const json::value& v) {
  if (v.is_int64()) return v.as_int64() >= 1 ? std::optional<long>(v.as_int64()) : std::nullopt;
  if (v.is_uint64())
    return v.as_uint64() >= 1 ? std::optional<long>(static_cast<long>(v.as_uint64()))
                              : std::nullopt;
  if (v.is_double() && v.as_double() >= 1 && std::floor(v.as_double()) == v.as_double() &&
      v.as_double() < 1e12)
    return static_cast<long>(v.as_double());
  return std::nullopt;
}

Result<TraceEntry> parse_line(std::string_view line, int number, long default_output_len) {
  const auto bad = [number](std::string_view field, std::string_view what) {
    return Error{fmt::format("line {}: {}: {}", number, field, what)};
  };
  boost::system::error_code ec;
  const json::value v = json::parse(line, ec);
  if (ec) return Error{fmt::format("line {}: not JSON ({})", number, ec.message())};
  if (!v.is_object()) return Error{fmt::format("line {}: not a JSON object", number)};
  const auto& o = v.as_object();
  TraceEntry e;
  e.line = number;
  const auto* t = o.if_contains("t");
  if (!t) return bad("t", "missing (seconds from the start)");
  if (!t->is_number() || !(t->to_number<double>() >= 0) || !std::isfinite(t->to_number<double>()))
    return bad("t", "must be a number of seconds >= 0");
  e.t = t->to_number<double>();

  const char* input_name = o.contains("input_len") ? "input_len" : "prompt_tokens";
  const auto* input = o.if_contains(input_name);
  if (!input) return bad("input_len", "missing (prompt tokens)");
  const auto in = count_field(*input);
  if (!in) return bad(input_name, "must be a whole number >= 1");
  e.input_len = *in;

  if (const auto* out = o.if_contains("output_len")) {
    const auto n = count_field(*out);
    if (!n) return bad("output_len", "must be a whole number >= 1");
    e.output_len = *n;
  } else {
    // A usage trace: what was generated, else what was asked for.
    e.output_len = default_output_len;
    for (const char* name : {"max_tokens", "completion_tokens"})
      if (const auto* f = o.if_contains(name); f && !f->is_null()) {
        if (!f->is_number() || f->to_number<double>() < 0)
          return bad(name, "must be a number >= 0");
        if (const auto n = count_field(*f)) e.output_len = *n;
      }
  }
  for (auto [field, target] : {std::pair{"session", &e.session}, std::pair{"model", &e.model},
                               std::pair{"label", &e.label}, std::pair{"phase", &e.label}}) {
    const auto* f = o.if_contains(field);
    if (!f || f->is_null()) continue;
    if (!f->is_string()) return bad(field, "must be a string");
    if (target->empty()) *target = std::string(f->as_string());
  }
  return e;
}

awaitable<void> wait_until(asio::steady_timer& timer, const LoadGenerator& generator,
                           Clock::time_point until) {
  // In slices, so a Ctrl-C does not wait for the next arrival.
  while (!generator.stopped() && Clock::now() < until) {
    timer.expires_at(std::min(until, Clock::now() + std::chrono::milliseconds(100)));
    co_await timer.async_wait(http::use_tuple);
  }
}

awaitable<void> replay_one(LoadGenerator& generator, asio::any_io_executor executor,
                           const TraceEntry& entry, const std::string& body, Clock::time_point t0,
                           RequestRecord& out, char& sent, double& late_ms) {
  asio::steady_timer timer(executor);
  const auto due =
      t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(entry.t));
  co_await wait_until(timer, generator, due);
  if (generator.stopped()) co_return;
  StepPlan plan;
  plan.requests = 1;
  plan.forced_tokens = entry.output_len;
  plan.prompt_target = entry.input_len;
  plan.body = [&body](long, bool) { return body; };
  const auto at = Clock::now();
  late_ms = std::chrono::duration<double, std::milli>(at - due).count();
  StepOutcome outcome = co_await generator.run_step(plan);
  if (outcome.records.empty()) co_return;
  const long index = out.index;
  const int session = out.session, turn = out.turn;
  std::string label = std::move(out.label);
  out = std::move(outcome.records.front());
  out.index = index;
  out.session = session;
  out.turn = turn;
  out.label = std::move(label);
  // The step's own start_s counts from just after `at`, up to the send that
  // e2e_ms is measured from: start_s + e2e_ms is when the response ended.
  out.start_s += seconds_between(t0, at);
  sent = 1;
}

}  // namespace

Result<std::vector<TraceEntry>> parse_trace(std::string_view text, long default_output_len) {
  std::vector<TraceEntry> entries;
  int number = 0;
  while (!text.empty()) {
    ++number;
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto entry = parse_line(line, number, default_output_len);
    if (!entry) return entry.error();
    entries.push_back(std::move(*entry));
  }
  if (entries.empty()) return Error{"no requests (one JSON object per line)"};
  std::stable_sort(entries.begin(), entries.end(),
                   [](const TraceEntry& a, const TraceEntry& b) { return a.t < b.t; });
  return entries;
}

std::string trace_line(const TraceEntry& e) {
  json::object o{{"t", e.t}, {"input_len", e.input_len}, {"output_len", e.output_len}};
  if (!e.session.empty()) o["session"] = e.session;
  if (!e.label.empty()) o["label"] = e.label;
  if (!e.model.empty()) o["model"] = e.model;
  return to_json_text(o);
}

std::vector<int> session_indices(const std::vector<TraceEntry>& entries) {
  std::map<std::string, int> known;
  std::vector<int> out;
  int next = 0;
  for (const auto& e : entries) {
    if (e.session.empty()) {
      out.push_back(next++);
      continue;
    }
    auto [it, fresh] = known.try_emplace(e.session, next);
    if (fresh) ++next;
    out.push_back(it->second);
  }
  return out;
}

Result<std::string> exact_prefix(const std::string& text, long target, const CountTokens& count) {
  std::vector<std::size_t> ends;  // where each word ends
  for (std::size_t i = 0; i < text.size(); ++i)
    if (text[i] == ' ') ends.push_back(i);
  ends.push_back(text.size());
  const auto prefix = [&](std::size_t words) { return text.substr(0, ends[words - 1]); };
  // Invariant: `low` words count at most `target` (0: none known), `high`
  // words more (ends.size() + 1: none known).
  std::size_t low = 0, high = ends.size() + 1;
  long low_count = 0;
  std::size_t n =
      std::clamp<std::size_t>(static_cast<std::size_t>(std::max(1L, target)), 1, ends.size());
  int call = 0;
  for (; call < kMaxCountCalls && high - low > 1; ++call) {
    auto c = count(prefix(n));
    if (!c) return c.error();
    if (*c == target) return prefix(n);
    if (*c < target) {
      low = n;
      low_count = *c;
    } else {
      high = n;
    }
    // The next guess from this one's tokens per word, kept inside (low, high).
    const double per_word = std::max(0.5, static_cast<double>(*c) / static_cast<double>(n));
    const double step = static_cast<double>(target - *c) / per_word;
    auto next = static_cast<long>(static_cast<double>(n) + std::round(step));
    next = std::clamp(next, static_cast<long>(low) + 1, static_cast<long>(high) - 1);
    if (next > static_cast<long>(ends.size())) break;  // the whole text is too short
    n = static_cast<std::size_t>(next);
  }
  if (low == 0 || high > ends.size()) return prefix(std::max<std::size_t>(1, low));
  // The word after `low` words is more than one token and jumps past the
  // target: short words after those, each counted, close the gap.
  std::string padded = prefix(low);
  for (std::size_t filler = 0; call < kMaxCountCalls && low_count < target; ++call) {
    static constexpr std::string_view kFillers[] = {"a", "the", "of", "and", "to", "in", "is"};
    if (filler == std::size(kFillers)) break;
    const std::string next = padded + ' ' + std::string(kFillers[filler]);
    auto c = count(next);
    if (!c) return c.error();
    if (*c > target) {
      ++filler;  // too long a word here: a shorter one
      continue;
    }
    padded = next;
    low_count = *c;
  }
  return padded;
}

Result<std::vector<json::value>> build_trace_prompts(const std::vector<TraceEntry>& entries,
                                                     const TracePromptSource& source) {
  const auto sessions = session_indices(entries);
  const int count = sessions.empty() ? 0 : *std::max_element(sessions.begin(), sessions.end()) + 1;
  std::vector<long> longest(static_cast<std::size_t>(count), 0);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    auto& l = longest[static_cast<std::size_t>(sessions[i])];
    l = std::max(l, entries[i].input_len);
  }
  const auto text_target = [&](long tokens) { return std::max(1L, tokens - source.overhead); };
  std::vector<std::vector<long>> id_streams(static_cast<std::size_t>(count));
  std::vector<std::string> texts(static_cast<std::size_t>(count));
  for (int s = 0; s < count; ++s) {
    auto rng = session_rng(source.seed, s, RngPurpose::trace_text);
    const long n = longest[static_cast<std::size_t>(s)];
    if (source.token_ids)
      id_streams[static_cast<std::size_t>(s)] = random_token_prompt(rng, n, source.ids);
    else
      texts[static_cast<std::size_t>(s)] = random_words(rng, text_target(n));
  }
  std::vector<json::value> prompts;
  std::map<std::pair<int, long>, std::size_t> done;  // (session, tokens) → a prompt built before
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const int s = sessions[i];
    const long tokens = entries[i].input_len;
    if (auto it = done.find({s, tokens}); it != done.end()) {
      prompts.push_back(prompts[it->second]);
      continue;
    }
    done[{s, tokens}] = prompts.size();
    if (source.token_ids) {
      const auto& ids = id_streams[static_cast<std::size_t>(s)];
      json::array a;
      for (long k = 0; k < tokens; ++k) a.emplace_back(ids[static_cast<std::size_t>(k)]);
      prompts.emplace_back(std::move(a));
      continue;
    }
    const auto& text = texts[static_cast<std::size_t>(s)];
    if (!source.count) {
      // One token per word, estimated.
      std::size_t end = 0;
      for (long w = 0; w < text_target(tokens) && end != std::string::npos; ++w)
        end = text.find(' ', end + (w > 0 ? 1 : 0));
      prompts.emplace_back(json::string(text.substr(0, end)));
      continue;
    }
    auto prefix = exact_prefix(text, text_target(tokens), source.count);
    if (!prefix)
      return Error{
          fmt::format("line {}: sizing the prompt: {}", entries[i].line, prefix.error().message)};
    prompts.emplace_back(json::string(*prefix));
  }
  return prompts;
}

std::string trace_body(const std::string& model, bool chat, const json::value& prompt,
                       long output_len) {
  json::object b{{"model", model}};
  if (chat)
    b["messages"] = json::array{json::object{{"role", "user"}, {"content", prompt}}};
  else
    b["prompt"] = prompt;
  b["max_tokens"] = output_len;
  b["min_tokens"] = output_len;  // vLLM; llama.cpp ignores it
  b["ignore_eos"] = true;
  b["stream"] = true;
  b["stream_options"] = json::object{{"include_usage", true}};
  return json::serialize(b);
}

awaitable<TraceOutcome> run_trace(LoadGenerator& generator, asio::any_io_executor executor,
                                  const std::vector<TraceEntry>& entries,
                                  const std::vector<std::string>& bodies) {
  TraceOutcome outcome;
  const auto sessions = session_indices(entries);
  std::vector<RequestRecord> records(entries.size());
  std::vector<char> sent(entries.size(), 0);
  std::vector<double> late(entries.size(), 0);
  std::map<int, int> turns;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    records[i].index = static_cast<long>(i);
    records[i].session = sessions[i] + 1;
    records[i].turn = ++turns[sessions[i]];
    records[i].label = entries[i].label;
  }
  const auto t0 = Clock::now();
  outcome.started_unix_s =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  int pending = 0;
  asio::steady_timer joined(executor);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    ++pending;
    asio::co_spawn(
        executor,
        replay_one(generator, executor, entries[i], bodies[i], t0, records[i], sent[i], late[i]),
        [&pending, &joined](std::exception_ptr e) {
          if (e) spdlog::error("bench: a trace request failed unexpectedly");
          if (--pending == 0) joined.cancel();
        });
  }
  while (pending > 0) {
    joined.expires_at(Clock::time_point::max());
    co_await joined.async_wait(http::use_tuple);
  }
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!sent[i]) continue;
    auto& r = records[i];
    if (r.error != "interrupted")
      outcome.makespan_s = std::max(outcome.makespan_s, r.start_s + r.e2e_ms / 1000.0);
    outcome.worst_late_ms = std::max(outcome.worst_late_ms, late[i]);
    outcome.records.push_back(std::move(r));
  }
  outcome.interrupted = generator.stopped();
  if (outcome.interrupted) outcome.makespan_s = seconds_between(t0, Clock::now());
  co_return outcome;
}

int peak_concurrency(const std::vector<RequestRecord>& records) {
  std::vector<std::pair<double, int>> edges;
  for (const auto& r : records) {
    if (r.error == "interrupted") continue;
    edges.emplace_back(r.start_s, +1);
    edges.emplace_back(r.start_s + r.e2e_ms / 1000.0, -1);
  }
  std::sort(edges.begin(), edges.end());  // an end sorts before a start at the same time
  int now = 0, peak = 0;
  for (const auto& [at, delta] : edges) peak = std::max(peak, now += delta);
  return peak;
}

std::vector<PhaseReport> summarize_phases(const std::vector<RequestRecord>& records) {
  std::vector<PhaseReport> phases;
  std::map<std::string, std::size_t> at;
  std::vector<std::vector<double>> ttft, e2e;
  for (const auto& r : records) {
    if (r.warmup || r.error == "interrupted") continue;
    const std::string label = r.label.empty() ? "-" : r.label;
    auto [it, fresh] = at.try_emplace(label, phases.size());
    if (fresh) {
      phases.push_back(PhaseReport{});
      phases.back().label = label;
      phases.back().first_send_s = r.start_s;
      ttft.emplace_back();
      e2e.emplace_back();
    }
    auto& p = phases[it->second];
    ++p.requests;
    p.first_send_s = std::min(p.first_send_s, r.start_s);
    p.last_end_s = std::max(p.last_end_s, r.start_s + r.e2e_ms / 1000.0);
    if (!r.ok()) {
      ++p.failed;
      ++p.errors[r.error];
      continue;
    }
    ++p.succeeded;
    if (r.short_output) ++p.short_outputs;
    if (r.ttft_ms >= 0) ttft[it->second].push_back(r.ttft_ms);
    e2e[it->second].push_back(r.e2e_ms);
  }
  for (std::size_t i = 0; i < phases.size(); ++i) {
    phases[i].ttft_ms = summarize(std::move(ttft[i]));
    phases[i].e2e_ms = summarize(std::move(e2e[i]));
  }
  return phases;
}

json::object trace_json(const TraceReport& t) {
  const auto summary = [](const Summary& s) {
    return json::object{{"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"mean", s.mean}};
  };
  json::array phases;
  for (const auto& p : t.phases) {
    json::object errors;
    for (const auto& [kind, n] : p.errors) errors[kind] = n;
    phases.push_back(json::object{{"label", p.label},
                                  {"requests", p.requests},
                                  {"succeeded", p.succeeded},
                                  {"failed", p.failed},
                                  {"short_outputs", p.short_outputs},
                                  {"ttft_ms", summary(p.ttft_ms)},
                                  {"e2e_ms", summary(p.e2e_ms)},
                                  {"first_send_s", p.first_send_s},
                                  {"last_end_s", p.last_end_s},
                                  {"errors", std::move(errors)}});
  }
  return json::object{{"file", t.file},
                      {"requests", t.requests},
                      {"sessions", t.sessions},
                      {"span_s", t.span_s},
                      {"makespan_s", t.makespan_s},
                      {"started_unix_s", t.started_unix_s},
                      {"worst_late_ms", t.worst_late_ms},
                      {"phases", std::move(phases)}};
}

std::string format_trace(const TraceReport& t) {
  constexpr const char* kRow = "{:>10} {:>5} {:>5} {:>6} {:>17} {:>17} {:>9} {:>9} {}";
  std::string out = fmt::format(kRow, "phase", "req", "ok", "failed", "TTFT p50/p99 ms",
                                "E2E p50/p99 ms", "first s", "last s", "errors") +
                    "\n";
  for (const auto& p : t.phases) {
    std::string errors;
    for (const auto& [kind, n] : p.errors)
      errors += fmt::format("{}{}={}", errors.empty() ? "" : " ", kind, n);
    if (p.short_outputs > 0)
      errors += fmt::format("{}short={}", errors.empty() ? "" : " ", p.short_outputs);
    out += fmt::format(kRow, p.label, p.requests, p.succeeded, p.failed,
                       fmt::format("{:.0f}/{:.0f}", p.ttft_ms.p50, p.ttft_ms.p99),
                       fmt::format("{:.0f}/{:.0f}", p.e2e_ms.p50, p.e2e_ms.p99),
                       fmt::format("{:.1f}", p.first_send_s), fmt::format("{:.1f}", p.last_end_s),
                       errors.empty() ? "-" : errors) +
           "\n";
  }
  out += fmt::format("makespan {:.1f} s (trace span {:.1f} s, {} requests, {} sessions{})\n",
                     t.makespan_s, t.span_s, t.requests, t.sessions,
                     t.worst_late_ms > 100
                         ? fmt::format("; the client sent up to {:.0f} ms late", t.worst_late_ms)
                         : std::string());
  return out;
}

}  // namespace switchyard::bench
