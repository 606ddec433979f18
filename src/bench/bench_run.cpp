#include "bench/bench_run.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "bench/agent_workload.h"
#include "bench/endpoint_probe.h"
#include "bench/engine_metrics.h"
#include "bench/load_generator.h"
#include "bench/needle_run.h"
#include "bench/prompt_builder.h"
#include "bench/report_html.h"
#include "bench/report_json.h"
#include "bench/report_table.h"
#include "bench/run_report.h"
#include "bench/trace_workload.h"
#include "common/command_error.h"
#include "http/use_tuple.h"

namespace switchyard::bench {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::awaitable;

namespace {

// A generator for one request's prompt: a function of the seed, the step,
// the request and the phase only, so runs are reproducible.
std::mt19937_64 request_rng(std::uint64_t seed, int step, long index, bool warmup) {
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                    static_cast<std::uint32_t>(step + 1), static_cast<std::uint32_t>(index),
                    static_cast<std::uint32_t>(warmup ? 1 : 0)};
  return std::mt19937_64(seq);
}

// The agent workload's options (validate() has checked the strings parse).
AgentOptions agent_options(const BenchOptions& o) {
  AgentOptions a;
  a.sessions = o.sessions;
  a.turns = o.turns;
  a.start_context = o.start_context;
  if (auto growth = parse_token_range(o.turn_growth)) {
    a.growth_min = growth->first;
    a.growth_max = growth->second;
  }
  if (auto think = parse_seconds(o.think_time)) a.think_s = *think;
  a.output_len = o.output_len;
  a.seed = o.seed;
  return a;
}

// One step's progress line: the painter coroutine and the step share it, so
// it outlives the step's locals. (Locals of a finished step used to be reused
// by the next step's at the same address: the old painter woke on the new
// timer, each re-arm cancelled the other's wait, and both painted in a loop.)
struct Ticker {
  explicit Ticker(asio::io_context& io) : timer(io) {}
  asio::steady_timer timer;
  bool running = true;
};

// How prompts are made for this endpoint; settled before the first step.
struct PromptPlan {
  std::string mode;  // token_ids | text_exact | text_estimated
  TokenIdRange ids;
  long vocab = 0;
  std::string tokenize_url;
  long overhead = 0;  // tokens the engine adds around the text (chat template, BOS)
  long text_target() const { return std::max(1L, target - overhead); }
  long target = 0;
  // What prompts are drawn from: --seed mixed with the run's salt.
  std::uint64_t seed = 0;
};

// A salt for this run's prompts, and the seed they are drawn from with it.
std::uint64_t new_salt() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) | device();
}
std::uint64_t salted(std::uint64_t seed, std::uint64_t salt) {
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                    static_cast<std::uint32_t>(salt), static_cast<std::uint32_t>(salt >> 32)};
  std::mt19937_64 mix(seq);
  return mix();
}

class BenchSession {
 public:
  BenchSession(const BenchOptions& options, HeaderList headers, asio::io_context& io,
               LoadGenerator& generator)
      : o_(options), headers_(std::move(headers)), io_(io), gen_(generator) {}

  RunReport run;
  PromptPlan prompts;
  std::vector<TraceEntry> trace_entries;  // --workload trace: the parsed file
  std::string failure;                    // set when the run cannot go on: one line
  bool simulated = false;  // the probe's response said it came from switchyard's simulator
  // The endpoint is a vLLM engine: its /metrics are scraped around each step
  // for the self-report check.
  bool vllm_metrics = false;

  awaitable<void> drive();

 private:
  awaitable<void> drive_agent();
  awaitable<void> drive_trace();
  std::string body(const json::value& prompt) const;
  std::string id_body(std::uint64_t seed_step, int step, long index, bool warmup,
                      long length) const;
  Result<std::vector<std::string>> text_bodies(int step, long count, bool warmup) const;
  awaitable<bool> probe();
  StepPlan step_plan(int step, int concurrency, double rate) const;
  awaitable<void> progress(std::shared_ptr<Ticker> ticker, std::string label);

  const BenchOptions& o_;
  HeaderList headers_;
  asio::io_context& io_;
  LoadGenerator& gen_;
  bool tty_ = isatty(STDERR_FILENO) != 0;
};

std::string BenchSession::body(const json::value& prompt) const {
  json::object b{{"model", o_.model}};
  if (o_.endpoint == "chat") {
    b["messages"] = json::array{json::object{{"role", "user"}, {"content", prompt}}};
  } else {
    b["prompt"] = prompt;
  }
  b["max_tokens"] = o_.output_len;
  b["min_tokens"] = o_.output_len;  // vLLM; llama.cpp ignores it
  b["ignore_eos"] = true;
  b["stream"] = true;
  b["stream_options"] = json::object{{"include_usage", true}};
  return json::serialize(b);
}

std::string BenchSession::id_body(std::uint64_t seed, int step, long index, bool warmup,
                                  long length) const {
  auto rng = request_rng(seed, step, index, warmup);
  json::array ids;
  for (long id : random_token_prompt(rng, length, prompts.ids)) ids.emplace_back(id);
  return body(ids);
}

Result<std::vector<std::string>> BenchSession::text_bodies(int step, long count,
                                                           bool warmup) const {
  std::vector<std::string> bodies;
  const auto counter = [&](const std::string& text) {
    return count_tokens(prompts.tokenize_url, headers_, o_.model, text);
  };
  for (long i = 0; i < count; ++i) {
    auto rng = request_rng(prompts.seed, step, i, warmup);
    if (prompts.mode == "text_estimated") {
      bodies.push_back(body(json::string(random_words(rng, prompts.text_target()))));
      continue;
    }
    auto prompt = exact_text_prompt(rng, prompts.text_target(), counter);
    if (!prompt) return prompt.error();
    if (prompt->tokens != prompts.text_target())
      return Error{fmt::format(
          "no text of exactly {} tokens as {} counts them after {} calls (closest: {}); the "
          "step's prompts would not be --input-len {}",
          prompts.text_target(), prompts.tokenize_url, prompt->count_calls, prompt->tokens,
          prompts.target)};
    bodies.push_back(body(json::string(prompt->text)));
  }
  return bodies;
}

StepPlan BenchSession::step_plan(int step, int concurrency, double rate) const {
  StepPlan plan;
  plan.step = step;
  plan.concurrency = concurrency;
  plan.rate = rate;
  plan.burstiness = o_.burstiness;
  plan.seed = o_.seed + static_cast<std::uint64_t>(step);
  plan.warmup = o_.warmup >= 0 ? o_.warmup : concurrency;
  plan.duration_s = o_.duration_s;
  plan.requests = o_.duration_s > 0          ? 0
                  : o_.requests_per_step > 0 ? o_.requests_per_step
                                             : std::max(8L, 4L * concurrency);
  plan.forced_tokens = o_.output_len;
  plan.prompt_target = o_.input_len;
  return plan;
}

// One request, not measured, that proves the endpoint works as the method
// needs: reachable, the key accepted, the model known, ignore_eos honoured.
// It also measures what the engine adds around a text prompt.
awaitable<bool> BenchSession::probe() {
  StepPlan plan;
  plan.step = -1;
  plan.requests = 1;
  plan.forced_tokens = o_.output_len;
  auto rng = request_rng(prompts.seed, -1, 0, false);
  const std::string probe_text = random_words(rng, 8);
  std::string probe_body = prompts.mode == "token_ids" ? id_body(prompts.seed, -1, 0, false, 8)
                                                       : body(json::string(probe_text));
  plan.body = [&probe_body](long, bool) { return probe_body; };
  StepOutcome outcome = co_await gen_.run_step(plan);
  if (gen_.stopped() || outcome.records.empty()) co_return false;
  const auto& r = outcome.records.front();
  simulated = r.simulated;
  const std::string where =
      o_.url + (o_.endpoint == "chat" ? "/v1/chat/completions" : "/v1/completions");
  if (r.error == "http_401" || r.error == "http_403") {
    failure = fmt::format("{} refused the API key ({}: {}): pass the right --api-key", where,
                          r.error.substr(5), r.error_detail);
  } else if (r.error == "http_404") {
    failure = fmt::format("{} answered 404 (unknown model '{}' or endpoint): {}", where, o_.model,
                          r.error_detail);
  } else if (r.error == "connect") {
    failure = fmt::format("cannot reach {}: {}", o_.url, r.error_detail);
  } else if (!r.ok()) {
    failure =
        fmt::format("the probe request to {} failed ({}): {}", where, r.error, r.error_detail);
    if (prompts.mode == "token_ids" && o_.vocab_size > 0)
      failure += fmt::format(
          " (token ids were drawn from --vocab-size {}: is it beyond the engine's vocabulary?)",
          o_.vocab_size);
  } else if (r.short_output) {
    failure = fmt::format(
        "{} does not honour ignore_eos: asked for exactly {} tokens, got {} (finish_reason "
        "'{}'); the forced-length method needs ignore_eos (llama.cpp) or min_tokens (vLLM)",
        where, o_.output_len, r.output_tokens(), r.finish_reason);
  }
  if (!failure.empty()) co_return false;
  if (prompts.mode != "token_ids" && r.prompt_tokens >= 0 && prompts.mode == "text_exact") {
    auto counted = count_tokens(prompts.tokenize_url, headers_, o_.model, probe_text);
    if (counted) prompts.overhead = std::max(0L, r.prompt_tokens - *counted);
  }
  co_return true;
}

awaitable<void> BenchSession::progress(std::shared_ptr<Ticker> ticker, std::string label) {
  while (ticker->running) {
    ticker->timer.expires_after(std::chrono::milliseconds(250));
    auto [ec] = co_await ticker->timer.async_wait(http::use_tuple);
    if (ec || !ticker->running) break;
    const auto& live = gen_.live();
    std::string line;
    if (!live.measuring) {
      line = fmt::format("{} warming up", label);
    } else {
      const double elapsed = std::chrono::duration<double>(Clock::now() - live.started).count();
      const double tps = elapsed > 0 ? static_cast<double>(live.tokens) / elapsed : 0;
      double eta = 0;
      if (live.total > 0 && live.done > 0)
        eta =
            elapsed * static_cast<double>(live.total - live.done) / static_cast<double>(live.done);
      if (live.total == 0) eta = std::max(0.0, live.duration_s - elapsed);
      const bool eta_known = live.total == 0 || live.done > 0;
      line = fmt::format("{} {}{} requests  {:.1f} tok/s so far  ETA {}", label, live.done,
                         live.total > 0 ? fmt::format("/{}", live.total) : "", tps,
                         eta_known ? fmt::format("{:.0f}s", eta) : "-");
    }
    std::cerr << "\r\x1b[K" << line << std::flush;
  }
}

// The agent workload: every session's texts are built (and sized with
// /tokenize) before the first request, so no blocking call runs while
// streams are being timed; then the sessions run to their last turn.
awaitable<void> BenchSession::drive_agent() {
  AgentOptions a = agent_options(o_);
  a.seed = prompts.seed;
  std::cerr << fmt::format("[agent] building prompts: {} sessions x {} turns\n", a.sessions,
                           a.turns);
  const MakeText make = [this](std::mt19937_64& rng, long tokens) -> Result<std::string> {
    if (prompts.mode != "text_exact") return random_words(rng, tokens);
    const CountTokens counter = [this](const std::string& text) {
      return count_tokens(prompts.tokenize_url, headers_, o_.model, text);
    };
    auto prompt = exact_text_prompt(rng, tokens, counter);
    if (!prompt) return prompt.error();
    return std::move(prompt->text);
  };
  std::vector<SessionScript> scripts;
  for (int s = 1; s <= a.sessions; ++s) {
    auto script = build_script(a, s, prompts.overhead, make);
    if (!script) {
      failure = fmt::format("building prompts: {}", script.error().message);
      co_return;
    }
    scripts.push_back(std::move(*script));
  }
  std::cerr << fmt::format("[agent] running {} sessions, think time {:g} s\n", a.sessions,
                           a.think_s);
  auto executor = io_.get_executor();
  AgentOutcome agent = co_await run_agent(gen_, executor, a, o_.model, scripts);
  StepPlan plan;
  plan.concurrency = a.sessions;
  plan.forced_tokens = a.output_len;
  StepOutcome outcome;
  outcome.records = std::move(agent.records);
  outcome.wall_s = agent.wall_s;
  outcome.interrupted = agent.interrupted;
  StepReport report = summarize_step(plan, outcome);
  std::cerr << fmt::format("[agent] done: {}/{} ok, {:.1f} output tok/s{}\n", report.succeeded,
                           report.requests, report.output_tokens_per_s,
                           outcome.interrupted ? " (interrupted)" : "");
  run.turns = summarize_turns(outcome.records);
  if (report.requests > 0 || !outcome.interrupted) run.steps.push_back(std::move(report));
  for (auto& r : outcome.records) run.requests.push_back(std::move(r));
}

// The trace workload: every prompt is built (and sized with /tokenize)
// before the start, so the sends keep to their times; then each request
// goes at its t whatever is in flight.
awaitable<void> BenchSession::drive_trace() {
  std::cerr << fmt::format("[trace] building prompts: {} requests\n", trace_entries.size());
  TracePromptSource source;
  source.token_ids = prompts.mode == "token_ids";
  source.ids = prompts.ids;
  source.overhead = prompts.overhead;
  source.seed = prompts.seed;
  if (prompts.mode == "text_exact")
    source.count = [this](const std::string& t) {
      return count_tokens(prompts.tokenize_url, headers_, o_.model, t);
    };
  auto built = build_trace_prompts(trace_entries, source);
  if (!built) {
    failure = fmt::format("--trace: {}: {}", o_.trace_path, built.error().message);
    co_return;
  }
  std::vector<std::string> bodies;
  for (std::size_t i = 0; i < trace_entries.size(); ++i) {
    const auto& e = trace_entries[i];
    bodies.push_back(trace_body(e.model.empty() ? o_.model : e.model, o_.endpoint == "chat",
                                (*built)[i], e.output_len));
  }
  std::cerr << fmt::format("[trace] replaying {} requests over {:.1f} s\n", trace_entries.size(),
                           trace_entries.back().t);
  TraceOutcome outcome = co_await run_trace(gen_, io_.get_executor(), trace_entries, bodies);
  TraceReport trace;
  trace.file = o_.trace_path;
  trace.requests = static_cast<long>(trace_entries.size());
  const auto sessions = session_indices(trace_entries);
  trace.sessions = sessions.empty() ? 0 : *std::max_element(sessions.begin(), sessions.end()) + 1;
  trace.span_s = trace_entries.back().t;
  trace.makespan_s = outcome.makespan_s;
  trace.started_unix_s = outcome.started_unix_s;
  trace.worst_late_ms = outcome.worst_late_ms;
  trace.phases = summarize_phases(outcome.records);
  StepPlan plan;
  StepOutcome step;
  step.records = std::move(outcome.records);
  step.wall_s = outcome.makespan_s;
  step.interrupted = outcome.interrupted;
  StepReport report = summarize_step(plan, step);
  report.concurrency = peak_concurrency(step.records);
  std::cerr << fmt::format("[trace] done: {}/{} ok, makespan {:.1f} s{}\n", report.succeeded,
                           report.requests, trace.makespan_s,
                           outcome.interrupted ? " (interrupted)" : "");
  run.trace = std::move(trace);
  if (report.requests > 0 || !outcome.interrupted) run.steps.push_back(std::move(report));
  for (auto& r : step.records) run.requests.push_back(std::move(r));
}

awaitable<void> BenchSession::drive() {
  if (!co_await probe()) co_return;
  if (o_.workload == "agent") {
    co_await drive_agent();
    co_return;
  }
  if (o_.workload == "trace") {
    co_await drive_trace();
    co_return;
  }
  const bool open = !o_.rates.empty();
  const std::size_t steps = open ? o_.rates.size() : o_.concurrency.size();
  const int warm_workers = o_.concurrency.empty() ? 1 : o_.concurrency.front();
  for (std::size_t i = 0; i < steps && !gen_.stopped(); ++i) {
    const int step = static_cast<int>(i);
    StepPlan plan =
        open ? step_plan(step, warm_workers, o_.rates[i]) : step_plan(step, o_.concurrency[i], 0);
    const std::string label =
        open ? fmt::format("[rate {:g}/s]", plan.rate) : fmt::format("[N={}]", plan.concurrency);
    std::vector<std::string> warm_bodies, bodies;
    if (prompts.mode == "token_ids") {
      const auto seed = prompts.seed;
      const long length = o_.input_len;
      plan.body = [this, seed, step, length](long index, bool warmup) {
        return id_body(seed, step, index, warmup, length);
      };
    } else {
      if (!tty_) std::cerr << label << " building prompts\n";
      auto warm = text_bodies(step, plan.warmup, true);
      const long pool = plan.requests > 0 ? plan.requests : std::max(16L, 4L * plan.concurrency);
      auto measured = warm ? text_bodies(step, pool, false) : warm;
      if (!warm || !measured) {
        // The step fails, not the run: the next may get its prompts.
        const std::string why = (!warm ? warm : measured).error().message;
        std::cerr << label << " failed: " << why << "\n";
        StepReport failed;
        failed.concurrency = plan.concurrency;
        failed.rate = plan.rate;
        failed.errors["prompts"] = 1;
        failed.error_examples["prompts"] = why;
        run.steps.push_back(std::move(failed));
        continue;
      }
      warm_bodies = std::move(*warm);
      bodies = std::move(*measured);
      plan.body = [&warm_bodies, &bodies](long index, bool warmup) {
        const auto& from = warmup ? warm_bodies : bodies;
        return from[static_cast<std::size_t>(index) % from.size()];
      };
    }
    if (!tty_)
      std::cerr << label << " "
                << (plan.requests > 0 ? std::to_string(plan.requests) + " requests"
                                      : fmt::format("{:g} s", plan.duration_s))
                << " after " << plan.warmup << " warm-up\n";
    // Blocking, but nothing is in flight between steps.
    const auto counted_before =
        vllm_metrics ? scrape_vllm_metrics(base_url(o_.url), headers_) : std::nullopt;
    auto ticker = std::make_shared<Ticker>(io_);
    if (tty_) asio::co_spawn(io_, progress(ticker, label), asio::detached);
    StepOutcome outcome = co_await gen_.run_step(plan);
    ticker->running = false;
    ticker->timer.cancel();
    if (tty_) std::cerr << "\r\x1b[K" << std::flush;
    StepReport report = summarize_step(plan, outcome);
    if (counted_before)
      if (auto counted_after = scrape_vllm_metrics(base_url(o_.url), headers_))
        apply_engine_counters(report, outcome.records, *counted_before, *counted_after);
    std::cerr << fmt::format("{} done: {}/{} ok, {:.1f} output tok/s{}\n", label, report.succeeded,
                             report.requests, report.output_tokens_per_s,
                             outcome.interrupted ? " (interrupted)" : "");
    if (report.requests > 0 || !outcome.interrupted) run.steps.push_back(std::move(report));
    for (auto& r : outcome.records) run.requests.push_back(std::move(r));
  }
}

std::string agent_description(const AgentOptions& a, const PromptPlan& p) {
  const std::string sizing =
      p.mode == "text_exact"
          ? fmt::format("random English words sized with {}", p.tokenize_url)
          : std::string("random English words (no /tokenize: lengths estimated)");
  return fmt::format(
      "agent workload: {} sessions, each a chat of {} turns that re-sends its whole "
      "conversation every turn (a system prompt, then user and assistant messages; the "
      "assistant's answers exactly as streamed, so the prefix is byte-stable). The first prompt "
      "is about {} tokens; each turn adds {}-{} (the last answer plus a new user message); {:g} s "
      "of think time between a session's turns. Texts: {}. Output forced to exactly {} tokens "
      "per turn. Per turn: TTFT and the share of the prompt the engine served from its cache "
      "(timings.cache_n or usage.prompt_tokens_details.cached_tokens). Headline: generated "
      "tokens / wall time of the whole run, think time included.",
      a.sessions, a.turns, a.start_context, a.growth_min, a.growth_max, a.think_s, sizing,
      a.output_len);
}

std::string trace_description(const BenchOptions& o, const PromptPlan& p) {
  const std::string prompt = p.mode == "token_ids" ? std::string("random token ids")
                             : p.mode == "text_exact"
                                 ? fmt::format("random English words sized with {}", p.tokenize_url)
                                 : std::string("random English words (no /tokenize: estimated)");
  return fmt::format(
      "trace workload: the requests of {} replayed, each sent at its t (seconds from the start) "
      "whatever is in flight, with a prompt of its input_len tokens ({}) and its output_len forced "
      "(max_tokens, min_tokens, ignore_eos); the requests of one session are prefixes of one "
      "text, so they share their prefix. Per label: TTFT, E2E and failures; the makespan is the "
      "start to the last response's end.",
      o.trace_path, prompt);
}

std::string method_description(const BenchOptions& o, const PromptPlan& p) {
  std::string prompt =
      p.mode == "token_ids" ? fmt::format("random token ids from [{}, {}) of a {}-token vocabulary",
                                          p.ids.first, p.ids.end, p.vocab)
      : p.mode == "text_exact"
          ? fmt::format(
                "random English words sized with {} to exactly {} tokens as the engine "
                "counts them ({} added by the engine around the text)",
                p.tokenize_url, o.input_len, p.overhead)
          : fmt::format("about {} random English words (no /tokenize: lengths estimated)",
                        o.input_len);
  const std::string loop =
      o.rates.empty()
          ? "closed loop: at each concurrency N, N workers each send their next request when "
            "the last one ends"
          : fmt::format(
                "open loop: arrivals at each rate with gamma gaps (burstiness {:g}; 1 = "
                "Poisson)",
                o.burstiness);
  return fmt::format(
      "prompts of {} tokens: {}; output forced to exactly {} tokens (max_tokens, min_tokens, "
      "ignore_eos); streamed with usage; {}; warm-up requests excluded. Headline: generated "
      "tokens (usage.completion_tokens) / wall time of the step. Random vocabulary is the worst "
      "case for speculative decoding; the prompts are salted anew on every run (method.salt), "
      "so a rerun does not find the last run's in a prefix cache, and the cached tokens the "
      "engine reported are in steps[].cached_tokens.",
      o.input_len, prompt, o.output_len, loop);
}

// What the engine said it served from its prefix cache over the steps, in
// a line of the report (a standard run's prompts are salted, so this is
// what a cache still found: another client's, or a bench's own repeats).
std::optional<std::string> cached_note(const RunReport& run) {
  long cached = -1, prompt = 0;
  for (const auto& s : run.steps) {
    if (s.cached_tokens < 0) continue;
    cached = std::max(0L, cached) + s.cached_tokens;
    prompt += std::lround(s.prompt_tokens.mean * static_cast<double>(s.prompt_tokens.count));
  }
  if (cached < 0 || run.method.workload == "agent") return std::nullopt;
  return fmt::format(
      "cached tokens: the engine served {} of {} measured prompt tokens from its "
      "prefix cache",
      cached, prompt);
}

int write_outputs(const BenchOptions& o, const RunReport& run) {
  int status = 0;
  if (!o.json_path.empty()) {
    if (auto w = write_file_atomically(o.json_path, run_to_json(run)); !w)
      status = command_error("bench", w.error().message, 1);
  }
  if (!o.html_path.empty()) {
    if (auto w = write_file_atomically(o.html_path, render_html({run}, {""})); !w)
      status = command_error("bench", w.error().message, 1);
  }
  return status;
}

}  // namespace

Result<bool> validate(const BenchOptions& o) {
  if (auto url = http::parse_url(o.url); !url) return Error{"--url: " + url.error().message};
  if (o.input_len < 1) return Error{"--input-len: must be at least 1"};
  if (o.output_len < 1) return Error{"--output-len: must be at least 1"};
  if (o.rates.empty() && o.concurrency.empty()) return Error{"--concurrency: give at least one N"};
  for (int n : o.concurrency)
    if (n < 1) return Error{fmt::format("--concurrency: {} is not a positive integer", n)};
  for (double r : o.rates)
    if (!(r > 0)) return Error{fmt::format("--rate: {} is not a positive rate", r)};
  if (!(o.burstiness > 0)) return Error{"--burstiness: must be positive"};
  if (o.requests_per_step > 0 && o.duration_s > 0)
    return Error{"--requests-per-step and --duration exclude each other"};
  if (o.endpoint != "chat" && o.endpoint != "completions")
    return Error{"--endpoint: chat or completions"};
  if (auto ok = check_request_flags(o.headers, o.tokenize_url); !ok) return ok;
  if (o.workload != "standard" && o.workload != "agent" && o.workload != "trace")
    return Error{"--workload: standard, agent or trace"};
  if (o.workload == "trace") {
    if (o.trace_path.empty()) return Error{"--trace: give the trace file (JSON lines)"};
    if (!o.rates.empty()) return Error{"--rate does not apply to --workload trace"};
    if (o.duration_s > 0) return Error{"--duration does not apply to --workload trace"};
  } else if (!o.trace_path.empty()) {
    return Error{"--trace needs --workload trace"};
  }
  if (o.workload == "agent") {
    if (o.sessions < 1) return Error{"--sessions: must be at least 1"};
    if (o.turns < 1) return Error{"--turns: must be at least 1"};
    if (o.start_context < 64) return Error{"--start-context: must be at least 64 tokens"};
    if (auto g = parse_token_range(o.turn_growth); !g)
      return Error{"--turn-growth: " + g.error().message};
    if (auto t = parse_seconds(o.think_time); !t)
      return Error{"--think-time: " + t.error().message};
    if (!o.rates.empty()) return Error{"--rate does not apply to --workload agent"};
    if (o.duration_s > 0) return Error{"--duration does not apply to --workload agent"};
  }
  return true;
}

int run_bench(const BenchOptions& options) {
  if (auto ok = validate(options); !ok) return command_error("bench", ok.error().message, 2);
  const bool agent = options.workload == "agent";
  const bool trace = options.workload == "trace";
  std::vector<TraceEntry> trace_entries;
  if (trace) {
    std::ifstream in(options.trace_path, std::ios::binary);
    if (!in)
      return command_error("bench", fmt::format("--trace: cannot read {}", options.trace_path), 2);
    std::stringstream text;
    text << in.rdbuf();
    auto entries = parse_trace(text.str(), options.output_len);
    if (!entries)
      return command_error(
          "bench", fmt::format("--trace: {}: {}", options.trace_path, entries.error().message), 2);
    trace_entries = std::move(*entries);
  }
  const std::string base = base_url(options.url);
  const HeaderList headers = request_headers(options.api_key, options.headers);
  auto info = probe_endpoint(base, headers, options.model);
  if (!info) return command_error("bench", info.error().message, 1);
  BenchOptions resolved = options;
  resolved.model = info->model;
  if (agent) {
    resolved.endpoint = "chat";  // conversations: the chat API
    resolved.concurrency = {options.sessions};
  }
  if (trace) resolved.concurrency = {1};  // the trace's own times decide what is in flight
  const BenchOptions& o = resolved;
  if (info->n_vocab && o.vocab_size > *info->n_vocab)
    return command_error(
        "bench",
        fmt::format("--vocab-size: {} is beyond the engine's vocabulary of {} tokens "
                    "(/v1/models meta.n_vocab); leave it out to use the engine's",
                    o.vocab_size, *info->n_vocab),
        2);

  PromptPlan prompts;
  prompts.target = o.input_len;
  prompts.tokenize_url = tokenize_url_for(base, o.tokenize_url);
  const std::uint64_t salt = new_salt();
  prompts.seed = salted(o.seed, salt);
  const long vocab = info->n_vocab.value_or(o.vocab_size);
  RunReport run;
  if (!info->model_note.empty()) run.notes.push_back(info->model_note);
  if (o.endpoint == "completions" && vocab > 10) {
    prompts.mode = "token_ids";
    prompts.vocab = vocab;
    prompts.ids = usable_token_ids(vocab);
  } else {
    auto counted = count_tokens(prompts.tokenize_url, headers, o.model, "hello world");
    prompts.mode = counted ? "text_exact" : "text_estimated";
    if (!counted && !o.allow_estimate)
      return command_error(
          "bench",
          fmt::format("no token counting at {} ({}): text prompts cannot be made "
                      "--input-len tokens; give the engine's tokenizer with "
                      "--tokenize-url, or --allow-estimate to estimate their lengths",
                      prompts.tokenize_url, counted.error().message),
          2);
    if (!counted)
      run.notes.push_back(fmt::format(
          "no token counting at {} ({}): prompt lengths are estimated, the engine's real counts "
          "(usage.prompt_tokens) are in steps[].prompt_tokens",
          prompts.tokenize_url, counted.error().message));
    if (o.endpoint == "completions")
      run.notes.push_back(
          "no vocabulary size (no meta.n_vocab, no --vocab-size): text prompts "
          "instead of token ids");
  }

  asio::io_context io;
  LoadTarget target;
  target.url = *http::parse_url(base);
  target.path = o.endpoint == "chat" ? "/v1/chat/completions" : "/v1/completions";
  for (const auto& [name, value] : headers) target.headers.add(name, value);
  target.idle_timeout = std::chrono::milliseconds(static_cast<long>(o.stream_idle_s * 1000));
  int max_in_flight = 0;
  for (int n : o.concurrency) max_in_flight = std::max(max_in_flight, n);
  const std::size_t max_connections =
      o.rates.empty() && !trace ? static_cast<std::size_t>(max_in_flight) + 8 : 1024;
  LoadGenerator generator(io.get_executor(), target, max_connections);

  BenchSession session(o, headers, io, generator);
  session.prompts = prompts;
  session.trace_entries = std::move(trace_entries);
  session.vllm_metrics = scrape_vllm_metrics(base, headers).has_value();
  session.run = std::move(run);
  auto& report = session.run;
  report.label = o.label;
  report.endpoint = base;
  report.model = o.model;
  report.started_at = utc_now_iso8601();

  const bool interrupted = run_interruptible(io, generator, session.drive());
  if (!session.failure.empty()) return command_error("bench", session.failure, 1);
  report.simulated = info->simulated || o.simulated || session.simulated;

  const auto& p = session.prompts;
  auto& m = report.method;
  m.api = o.endpoint;
  m.input_len = o.input_len;
  m.output_len = o.output_len;
  m.prompt_mode = p.mode;
  m.vocab_size = p.vocab;
  m.loop = o.rates.empty() ? "closed" : "open";
  m.warmup = o.warmup;
  m.requests_per_step = o.requests_per_step;
  m.duration_s = o.duration_s;
  m.burstiness = o.burstiness;
  m.seed = o.seed;
  m.salt = salt;
  m.description = method_description(o, p);
  if (agent) {
    const AgentOptions a = agent_options(o);
    m.workload = "agent";
    m.sessions = a.sessions;
    m.turns = a.turns;
    m.start_context = a.start_context;
    m.turn_growth_min = a.growth_min;
    m.turn_growth_max = a.growth_max;
    m.think_time_s = a.think_s;
    m.input_len = a.start_context;
    m.warmup = 0;
    m.requests_per_step = static_cast<long>(a.sessions) * a.turns;
    m.description = agent_description(a, p);
  }
  if (trace) {
    m.workload = "trace";
    m.loop = "trace";
    m.warmup = 0;
    m.requests_per_step = report.trace ? report.trace->requests : 0;
    m.description = trace_description(o, p);
  }
  report.interrupted = interrupted;
  if (report.simulated)
    report.notes.push_back(
        "simulated engines: these numbers describe switchyard's simulator, "
        "not any hardware");
  if (o.duration_s > 0 && p.mode != "token_ids")
    report.notes.push_back(
        "--duration with text prompts re-sends a pool of prompts; an engine "
        "with a prefix cache may serve repeats from it");
  if (auto cached = cached_note(report)) report.notes.push_back(*cached);
  if (agent && !report.turns.empty() && report.turns.size() > 1 && !report.turns[1].cached_ratio)
    report.notes.push_back(
        "the engine reported no cached tokens (no timings.cache_n, no "
        "usage.prompt_tokens_details.cached_tokens): the cache columns are empty");

  std::cout << format_table(report) << std::flush;
  const int written = write_outputs(o, report);
  if (interrupted) return command_error("bench", "interrupted: partial results written", 130);
  if (written != 0) return written;
  for (const auto& s : report.steps)
    if (!s.errors.empty() || s.short_outputs > 0 || s.succeeded == 0) return 1;
  return 0;
}

namespace {

// `bench needle --json` writes {"kind": "needle", …}; a bench run has no kind.
bool is_needle_result(const std::string& text) {
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(text, ec);
  const boost::json::value* kind =
      !ec && v.is_object() ? v.as_object().if_contains("kind") : nullptr;
  return kind && kind->is_string() && kind->as_string() == "needle";
}

}  // namespace

int run_report(const std::vector<std::string>& json_files, const std::vector<std::string>& labels,
               const std::string& html_path) {
  if (json_files.empty()) return command_error("bench", "report: give one or more JSON files", 2);
  if (html_path.empty()) return command_error("bench", "report: --html FILE is required", 2);
  if (labels.size() > json_files.size())
    return command_error("bench",
                         fmt::format("report: --label given {} times for {} file(s)", labels.size(),
                                     json_files.size()),
                         2);
  std::vector<RunReport> runs;
  std::vector<std::string> names;
  std::vector<NeedleGrid> needles;
  for (std::size_t i = 0; i < json_files.size(); ++i) {
    const std::string& file = json_files[i];
    std::ifstream in(file, std::ios::binary);
    if (!in) return command_error("bench", fmt::format("report: cannot read {}", file), 1);
    std::stringstream text;
    text << in.rdbuf();
    const std::string label = i < labels.size() ? labels[i] : std::string();
    const std::string base_name = file.substr(file.find_last_of('/') + 1);
    if (is_needle_result(text.str())) {
      auto grid = needle_grid_from_json(text.str(), file);
      if (!grid) return command_error("bench", "report: " + grid.error().message, 1);
      if (!label.empty()) grid->label = label;
      if (grid->label.empty()) grid->label = base_name;
      needles.push_back(std::move(*grid));
      continue;
    }
    auto run = run_from_json(text.str(), file);
    if (!run) return command_error("bench", "report: " + run.error().message, 1);
    names.push_back(!label.empty() ? label : !run->label.empty() ? run->label : base_name);
    runs.push_back(std::move(*run));
  }
  if (auto w = write_file_atomically(html_path, render_html(runs, names, needles)); !w)
    return command_error("bench", w.error().message, 1);
  std::cout << "wrote " << html_path << " (" << runs.size() << " runs";
  if (!needles.empty()) std::cout << ", " << needles.size() << " needle grid(s)";
  std::cout << ")\n";
  return 0;
}

}  // namespace switchyard::bench
