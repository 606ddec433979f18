// `switchyard bench`: the honest benchmark (forced output, tokens/wall), and
// `switchyard bench report` to overlay saved runs.
#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "bench/bench_run.h"
#include "bench/needle_run.h"
#include "bench/trace_day.h"
#include "cli/command.h"

namespace switchyard::cli {

namespace {

struct BenchFlags {
  bench::BenchOptions options;
  std::vector<std::string> report_files;
  std::string report_html;
  std::vector<std::string> report_labels;
  bench::NeedleOptions needle;
  bench::DayOptions day;
  std::string day_out;
};

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto flags = std::make_shared<BenchFlags>();
  auto& o = flags->options;
  auto* sub = app.add_subcommand(
      "bench",
      "Benchmark an OpenAI-compatible endpoint: exact-length random prompts, forced output "
      "length, output tokens / wall time per concurrency step");
  sub->add_option("--url", o.url, "Endpoint base URL (engine, gateway or sim), http://host:port");
  sub->add_option("--model,-m", o.model,
                  "Model name to request (optional when the endpoint serves one model)");
  sub->add_option("--input-len", o.input_len, "Prompt length in tokens")
      ->check(CLI::Range(1L, 10'000'000L))
      ->capture_default_str();
  sub->add_option("--output-len", o.output_len, "Forced output length in tokens")
      ->check(CLI::Range(1L, 10'000'000L))
      ->capture_default_str();
  sub->add_option("--concurrency,-c", o.concurrency,
                  "Closed-loop steps: requests in flight, e.g. 1,2,4,8")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  auto* rate = sub->add_option("--rate", o.rates,
                               "Open-loop steps instead: arrival rates in requests/s, e.g. 0.5,1,2")
                   ->delimiter(',')
                   ->check(CLI::PositiveNumber);
  sub->add_option("--burstiness", o.burstiness,
                  "Open loop: gamma shape of the gaps (1 = Poisson, <1 burstier)")
      ->check(CLI::PositiveNumber)
      ->needs(rate)
      ->capture_default_str();
  sub->add_option("--api-key", o.api_key, "Sent as 'Authorization: Bearer KEY'");
  sub->add_option("--header,-H", o.headers, "Extra request header 'Name: value' (repeatable)");
  sub->add_option("--seed", o.seed, "Seed for prompts and arrivals")->capture_default_str();
  auto* requests = sub->add_option("--requests-per-step", o.requests_per_step,
                                   "Measured requests per step (default 4xN, at least 8)")
                       ->check(CLI::Range(1L, 100'000'000L));
  sub->add_option("--duration", o.duration_s, "Seconds per step instead of a request count")
      ->check(CLI::PositiveNumber)
      ->excludes(requests);
  sub->add_option("--warmup", o.warmup, "Warm-up requests per step (default N), not measured")
      ->check(CLI::Range(0L, 1'000'000L));
  sub->add_option("--endpoint", o.endpoint,
                  "API: completions (token-id prompts) or chat (text prompts)")
      ->check(CLI::IsMember({"completions", "chat"}))
      ->capture_default_str();
  sub->add_option("--tokenize-url", o.tokenize_url,
                  "Where to count tokens for text prompts: a /tokenize URL or an engine's base "
                  "URL (default URL/tokenize)");
  sub->add_flag("--allow-estimate", o.allow_estimate,
                "Without a tokenizer that answers, estimate text prompts' lengths (else exit 2)");
  sub->add_option("--vocab-size", o.vocab_size,
                  "Vocabulary size when /v1/models has no meta.n_vocab")
      ->check(CLI::Range(11L, 100'000'000L));
  sub->add_option("--json", o.json_path, "Write every step and request to FILE");
  sub->add_option("--html", o.html_path, "Write a self-contained HTML report with charts to FILE");
  sub->add_option("--label", o.label,
                  "Name of this run in reports and their legends (default: endpoint and model)");
  sub->add_flag(
      "--simulated", o.simulated,
      "Label results 'simulated engines' (when a gateway hides that its engines are sims)");
  sub->add_option("--stream-idle", o.stream_idle_s,
                  "Seconds of silence in a stream before a request counts as timed out")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();

  sub->add_option("--workload", o.workload,
                  "standard (concurrency/rate steps), agent (multi-turn sessions re-sending "
                  "their growing context; chat API) or trace (timed requests from --trace)")
      ->check(CLI::IsMember({"standard", "agent", "trace"}))
      ->capture_default_str();
  sub->add_option("--sessions", o.sessions, "Agent workload: concurrent chat sessions")
      ->check(CLI::Range(1, 100'000))
      ->capture_default_str();
  sub->add_option("--turns", o.turns, "Agent workload: turns per session")
      ->check(CLI::Range(1, 10'000))
      ->capture_default_str();
  sub->add_option("--start-context", o.start_context,
                  "Agent workload: tokens of each session's first prompt")
      ->check(CLI::Range(64L, 10'000'000L))
      ->capture_default_str();
  sub->add_option("--turn-growth", o.turn_growth,
                  "Agent workload: tokens added per turn (last answer + new user message), MIN-MAX")
      ->capture_default_str();
  sub->add_option("--think-time", o.think_time,
                  "Agent workload: pause between a session's turns, e.g. 2s or 500ms")
      ->capture_default_str();

  sub->add_option("--trace", o.trace_path,
                  "Trace workload: JSON lines {t, input_len, output_len, session, label} to "
                  "replay (switchyard usage --trace, bench make-trace)");

  auto& d = flags->day;
  auto* day = sub->add_subcommand(
      "make-trace",
      "Write a synthetic day for --workload trace: a chat trickle, a burst, a huge cold prompt");
  day->add_option("--out,-o", flags->day_out, "Trace file to write (default: stdout)");
  day->add_option("--seed", d.seed, "Seed for the trickle's times")->capture_default_str();
  day->add_option("--compress", d.compress,
                  "Divide every time by this (match the engines' --speed-factor)")
      ->capture_default_str();
  day->add_option("--duration", d.duration_s, "Seconds the trickle runs (before --compress)")
      ->capture_default_str();
  day->add_option("--trickle-sessions", d.trickle_sessions, "Chats at once")->capture_default_str();
  day->add_option("--trickle-gap", d.trickle_gap_s, "Mean seconds between a chat's turns")
      ->capture_default_str();
  day->add_option("--trickle-input", d.trickle_input, "A chat's first prompt, tokens")
      ->capture_default_str();
  day->add_option("--trickle-growth", d.trickle_growth,
                  "Tokens a turn adds besides the last answer")
      ->capture_default_str();
  day->add_option("--trickle-output", d.trickle_output, "Output tokens per chat turn")
      ->capture_default_str();
  day->add_option("--trickle-turns", d.trickle_turns, "Turns before a new chat takes over")
      ->capture_default_str();
  day->add_option("--burst", d.burst_requests, "Requests of the burst, sent at once (0: none)")
      ->capture_default_str();
  day->add_option("--burst-at", d.burst_at_s, "When the burst comes, seconds")
      ->capture_default_str();
  day->add_option("--burst-input", d.burst_input, "Prompt tokens per burst request")
      ->capture_default_str();
  day->add_option("--burst-output", d.burst_output, "Output tokens per burst request")
      ->capture_default_str();
  day->add_option("--cold", d.cold_requests, "Huge cold prompts (0: none)")->capture_default_str();
  day->add_option("--cold-at", d.cold_at_s, "When the first cold prompt comes, seconds")
      ->capture_default_str();
  day->add_option("--cold-gap", d.cold_gap_s, "Seconds between cold prompts")
      ->capture_default_str();
  day->add_option("--cold-input", d.cold_input, "Prompt tokens of a cold prompt")
      ->capture_default_str();
  day->add_option("--cold-output", d.cold_output, "Output tokens of a cold prompt")
      ->capture_default_str();

  auto& n = flags->needle;
  auto* needle = sub->add_subcommand(
      "needle",
      "Long-context retrieval check (RULER-style multi-key needles): score by context x depth");
  needle->add_option("--url", n.url, "Endpoint base URL, http://host:port")->required();
  needle->add_option("--model,-m", n.model, "Model name to request")->required();
  needle->add_option("--context", n.context, "Request size in tokens (prompt + answer budget)")
      ->check(CLI::Range(256L, 100'000'000L))
      ->capture_default_str();
  needle->add_option("--contexts", n.contexts, "Several request sizes instead, e.g. 32768,131072")
      ->delimiter(',')
      ->check(CLI::Range(256L, 100'000'000L));
  needle->add_option("--needles", n.needles, "Needles per request")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  needle->add_option("--depths", n.depths, "Needle depths, percent of the haystack, e.g. 10,50,90")
      ->delimiter(',')
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  needle->add_option("--trials", n.trials, "Requests per context x depth, each with new needles")
      ->check(CLI::Range(1, 10'000))
      ->capture_default_str();
  needle->add_option("--output-len", n.output_len, "Answer budget in tokens (max_tokens)")
      ->check(CLI::Range(1L, 1'000'000L))
      ->capture_default_str();
  needle->add_option("--api-key", n.api_key, "Sent as 'Authorization: Bearer KEY'");
  needle->add_option("--header,-H", n.headers, "Extra request header 'Name: value' (repeatable)");
  needle->add_option("--seed", n.seed, "Seed for keys and values")->capture_default_str();
  needle->add_option("--tokenize-url", n.tokenize_url,
                     "Where to count tokens (default URL/tokenize)");
  needle->add_option("--json", n.json_path, "Write every request and the scores to FILE");
  needle->add_option("--html", n.html_path, "Write the score grid as an HTML heat map to FILE");
  needle->add_option("--label", n.label, "Name of this run in reports");
  needle->add_flag("--simulated", n.simulated,
                   "Say the engine is simulated (when a gateway hides that its engines are sims)");
  needle
      ->add_option("--stream-idle", n.stream_idle_s,
                   "Seconds of silence (a long prefill) before a request counts as timed out")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();

  auto* report =
      sub->add_subcommand("report", "Overlay saved runs (--json files) in one HTML report");
  report->add_option("files", flags->report_files, "Bench and needle JSON files")->required();
  report->add_option("--label", flags->report_labels,
                     "Name of the n-th file's run (repeatable; default: its --label, else the "
                     "file name)");
  report->add_option("--html", flags->report_html, "Output HTML file")->required();

  return {sub, [flags, sub, report, needle, day]() {
            if (report->parsed())
              return bench::run_report(flags->report_files, flags->report_labels,
                                       flags->report_html);
            if (day->parsed()) return bench::run_make_trace(flags->day, flags->day_out);
            if (needle->parsed()) return bench::run_needle(flags->needle);
            if (flags->options.url.empty()) {
              std::cerr << "switchyard bench: --url is required\n" << sub->help();
              return 2;
            }
            return bench::run_bench(flags->options);
          }};
}

}  // namespace switchyard::cli
