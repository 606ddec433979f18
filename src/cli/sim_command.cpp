// `switchyard sim`: a stand-in engine that speaks llama-server's or vLLM's
// HTTP API over a calibrated model of slots, batching, KV and timing.
#include <CLI/CLI.hpp>
#include <boost/asio.hpp>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <iostream>
#include <memory>

#include <spdlog/spdlog.h>

#include "cli/command.h"
#include "cli/weights_load.h"
#include "http/server.h"
#include "sim/engine.h"
#include "sim/idle_sleep.h"
#include "sim/llamacpp_api.h"
#include "sim/presets.h"
#include "sim/router_child.h"
#include "sim/vllm_api.h"

namespace switchyard::cli {

namespace {

// Every model flag is optional: unset ones keep the preset's value (or the
// default engine's when no preset is named).
struct SimFlags {
  std::string host = "127.0.0.1";
  int port = 8081;
  std::optional<std::string> preset;
  std::optional<std::string> dialect;
  std::optional<int> slots;
  std::optional<int> ctx_size;
  std::optional<int> max_model_len;
  std::optional<double> tokens_per_second;
  std::optional<std::string> decode_curve;
  std::optional<double> prefill_tokens_per_second;
  std::optional<double> prefill_half_depth;
  std::optional<int> kv_capacity_tokens;
  std::optional<int> block_size;
  std::optional<int> max_batched_tokens;
  bool no_prefix_cache = false;
  // llamacpp: the host-memory prompt cache, MiB; llama-server's default.
  int cache_ram = 8192;
  std::optional<int> spec_draft_tokens;
  std::optional<double> spec_acceptance;
  std::optional<double> over_report;
  std::optional<double> speed_factor;
  std::optional<std::uint64_t> seed;
  // The name served: --alias, else the model file's path (as llama-server
  // and vLLM report a model started without a name).
  std::optional<std::string> alias;
  std::string model_path = "/models/sim.gguf";
  double keep_alive_timeout = 5;
  std::optional<unsigned> keep_alive_max;
  bool list_presets = false;
  bool reranking = false;
  bool no_ui = false;
  sim::FaultOptions faults;
  // vLLM sleep mode and the times a model load and a wake-up take (modelled
  // seconds, divided by the speed factor).
  bool sleep_mode = false;
  // llama-server --sleep-idle-seconds: asleep after that long idle; -1 never.
  double sleep_idle_seconds = -1;
  double load_time = 0;
  double wake_time = 0;
  // The weights' size and read rate: their load adds size / rate to load_time.
  std::optional<std::string> model_size;
  std::string load_rate{kDefaultLoadRate};
};

struct Resolved {
  std::string dialect;
  sim::EngineOptions engine;
};

// The preset (or defaults) with the explicit flags on top.
Result<Resolved> resolve(const SimFlags& f) {
  Resolved r;
  const sim::Preset* preset = nullptr;
  if (f.preset) {
    preset = sim::find_preset(*f.preset);
    if (!preset) {
      std::string names;
      for (const auto& p : sim::presets()) names += (names.empty() ? "" : ", ") + p.name;
      return Error{"--preset: unknown preset '" + *f.preset + "' (known: " + names + ")"};
    }
    r.engine = preset->engine;
  }
  r.dialect = f.dialect.value_or(preset ? preset->dialect : "llamacpp");
  auto& s = r.engine.scheduler;
  const bool vllm = r.dialect == "vllm";
  s.mode = vllm ? sim::SchedulerMode::paged : sim::SchedulerMode::slots;
  if (!preset && vllm) s.max_batched_tokens = 8192;
  if (f.slots) s.max_seqs = *f.slots;
  if (vllm) {
    if (f.ctx_size) s.slot_context = *f.ctx_size;
    if (f.max_model_len) s.slot_context = *f.max_model_len;
  } else if (f.ctx_size || !preset) {
    // llama-server splits -c evenly across its slots (default -c 8192).
    s.slot_context = f.ctx_size.value_or(8192) / s.max_seqs;
  }
  if (f.tokens_per_second) s.timing.decode_curve = {{1, 1.0 / *f.tokens_per_second}};
  if (f.decode_curve) {
    auto curve = sim::parse_decode_curve(*f.decode_curve);
    if (!curve) return Error{"--decode-curve: " + curve.error().message};
    s.timing.decode_curve = *curve;
  }
  if (f.prefill_tokens_per_second)
    s.timing.prefill_tokens_per_second = *f.prefill_tokens_per_second;
  if (f.prefill_half_depth) s.timing.prefill_half_depth = *f.prefill_half_depth;
  if (f.kv_capacity_tokens) s.kv_capacity_tokens = *f.kv_capacity_tokens;
  if (f.block_size) s.block_size = *f.block_size;
  if (f.max_batched_tokens) s.max_batched_tokens = *f.max_batched_tokens;
  if (f.no_prefix_cache) s.prefix_caching = false;
  if (!vllm) s.cache_ram_mib = f.cache_ram;
  if (f.spec_draft_tokens) s.timing.spec_draft_tokens = *f.spec_draft_tokens;
  if (f.spec_acceptance) s.timing.spec_acceptance = *f.spec_acceptance;
  if (f.over_report) r.engine.over_report = *f.over_report;
  if (f.speed_factor) r.engine.speed_factor = *f.speed_factor;
  if (f.seed) r.engine.seed = *f.seed;
  s.seed = r.engine.seed;
  if (auto error = sim::validate(r.engine)) return *error;
  return r;
}

int list_presets() {
  for (const auto& p : sim::presets()) std::cout << sim::preset_line(p) << "\n";
  return 0;
}

int run_sim(const SimFlags& flags) {
  if (flags.list_presets) return list_presets();
  auto resolved = resolve(flags);
  if (!resolved) {
    std::cerr << "switchyard sim: " << resolved.error().message << "\n";
    return 2;
  }
  const auto& options = resolved->engine;
  if (flags.sleep_mode && resolved->dialect != "vllm") {
    std::cerr << "switchyard sim: --sleep-mode: vLLM's sleep endpoints need --dialect vllm\n";
    return 2;
  }
  if (flags.sleep_idle_seconds >= 0 && resolved->dialect == "vllm") {
    std::cerr << "switchyard sim: --sleep-idle-seconds is llama-server's (--dialect llamacpp); "
                 "vLLM sleeps when told (--sleep-mode)\n";
    return 2;
  }
  const auto weights = weights_load_seconds(flags.model_size.value_or("0"), flags.load_rate);
  if (!weights) {
    std::cerr << "switchyard sim: " << weights.error().message << "\n";
    return 2;
  }
  auto faults = flags.faults;
  // The weights' load is a loading phase, as --startup-delay, but modelled.
  faults.startup_delay_seconds += (flags.load_time + *weights) / options.speed_factor;
  boost::asio::io_context io;
  sim::Engine engine(io.get_executor(), options);
  std::unique_ptr<sim::IdleSleep> idle_sleep;
  std::unique_ptr<http::Handler> api;
  std::unique_ptr<sim::RouterChild> router_child;  // started by a router: llama-server's reports
  http::ServerOptions server_options;
  // Idle connections close after the timeout in both engines (cpp-httplib,
  // uvicorn's timeout_keep_alive); only cpp-httplib caps requests per
  // connection and says so in a Keep-Alive header.
  server_options.keep_alive_idle = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::duration<double>(flags.keep_alive_timeout));
  if (resolved->dialect == "vllm") {
    sim::VllmApiOptions o;
    o.model_name = flags.alias.value_or(flags.model_path);
    o.model_path = flags.model_path;
    o.faults = faults;
    o.sleep_mode = flags.sleep_mode;
    o.wake_seconds = flags.wake_time / options.speed_factor;
    // As vLLM reads it: an integer, not 0.
    const char* store = std::getenv("VLLM_ENABLE_RESPONSES_API_STORE");
    o.store_responses = store && std::atoi(store) != 0;
    api = std::make_unique<sim::VllmApi>(engine, o);
    server_options.server_name = "uvicorn";
    server_options.keep_alive_max = flags.keep_alive_max.value_or(0);
  } else {
    sim::LlamacppApiOptions o;
    o.model_alias = flags.alias;
    o.model_path = flags.model_path;
    o.reranking = flags.reranking;
    o.ui = !flags.no_ui;
    o.faults = faults;
    if (flags.sleep_idle_seconds >= 0) {
      // A wake loads the weights again: as long as the first load.
      idle_sleep = std::make_unique<sim::IdleSleep>(
          io.get_executor(), flags.sleep_idle_seconds, faults.startup_delay_seconds,
          sim::IdleSleep::Hooks{[&router_child] {
                                  if (router_child) router_child->slept();
                                },
                                [&router_child](double seconds) {
                                  if (router_child) router_child->waking(seconds);
                                }});
      o.idle_sleep = idle_sleep.get();
    }
    auto llamacpp = std::make_unique<sim::LlamacppApi>(engine, o);
    if (sim::RouterChild::wanted())
      router_child = std::make_unique<sim::RouterChild>(
          io.get_executor(), faults.startup_delay_seconds,
          [&api = *llamacpp] { return api.model_info(); }, [&io] { io.stop(); });
    api = std::move(llamacpp);
    server_options.server_name = "llama.cpp";
    server_options.keep_alive_max = flags.keep_alive_max.value_or(100);
    server_options.advertise_keep_alive = true;
  }
  server_options.address = flags.host;
  server_options.port = static_cast<std::uint16_t>(flags.port);
  http::Server server(io.get_executor(), *api, server_options);
  auto port = server.listen();
  if (!port) {
    std::cerr << "switchyard sim: " << port.error().message << "\n";
    return 1;
  }
  server.start();
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](auto, int) {
    if (router_child)
      router_child->terminate();
    else
      io.stop();
  });
  // Tests wait for "listening on HOST:PORT": keep that wording.
  spdlog::info("sim ({} dialect, {} slots, {}, speed x{}) listening on {}:{}", resolved->dialect,
               options.scheduler.max_seqs, sim::describe_speed(options.scheduler.timing),
               options.speed_factor, flags.host, *port);
  if (flags.preset) spdlog::info("sim: preset {}", *flags.preset);
  io.run();
  return 0;
}

}  // namespace

Command add_sim_command(CLI::App& app) {
  auto flags = std::make_shared<SimFlags>();
  auto* sub = app.add_subcommand(
      "sim", "A simulated engine (llama-server's or vLLM's API) for tests and demos without a GPU");
  sub->add_option(
      "--preset", flags->preset,
      "Calibrated engine model: 7900xtx-27b-q4, 7900xtx-blower-27b-q4, r9700-27b-q4, "
      "2x7900xtx-tp2-vllm, fast (--list-presets describes them; explicit flags override "
      "its values)");
  sub->add_option("--dialect", flags->dialect,
                  "API dialect to speak (default: the preset's, "
                  "else llamacpp)")
      ->check(CLI::IsMember({"llamacpp", "vllm"}));
  sub->add_option("--host", flags->host, "Address to listen on")->capture_default_str();
  sub->add_option("--port", flags->port, "Port to listen on (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  sub->add_flag("--list-presets", flags->list_presets,
                "Print one line per preset (what it models, its tok/s) and exit");
  sub->add_option("--alias,-a,--served-model-name", flags->alias,
                  "Model name the engine serves and reports (default: --model-path, as "
                  "llama-server and vLLM report a model started without a name)");
  sub->add_option("--model-path,-m,--model", flags->model_path,
                  "Path of the simulated model file, shown in /props and as the model name "
                  "without --alias")
      ->capture_default_str();
  sub->add_option("--keep-alive-timeout", flags->keep_alive_timeout,
                  "Close a keep-alive connection idle this many seconds, as llama-server and "
                  "vLLM do after 5 (fractions allowed; not scaled by --speed-factor)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--keep-alive-max", flags->keep_alive_max,
                  "Close a connection after this many requests, the last one answered "
                  "'Connection: close' (0: no limit; default 100 as llama-server, vllm none)")
      ->check(CLI::Range(0u, 1u << 30));
  sub->add_flag("--no-ui,--no-webui", flags->no_ui,
                "llamacpp: /props says \"ui\": false, as llama-server --no-ui (llama.cpp's web "
                "UI then hides the model behind a router)");
  sub->add_flag("--reranking,--rerank", flags->reranking,
                "llamacpp: serve /rerank, /reranking and /v1/rerank (else 501, as llama-server)");

  sub->add_flag("--sleep-mode,--enable-sleep-mode", flags->sleep_mode,
                "vllm: serve POST /sleep?level=1, POST /wake_up and GET /is_sleeping (asleep: "
                "GPU freed, completions 503)");
  sub->add_option("--sleep-idle-seconds", flags->sleep_idle_seconds,
                  "llamacpp: sleep after this many seconds with no completion, as llama-server "
                  "(/props says is_sleeping; the next completion waits while the weights load "
                  "again; wall-clock seconds; -1 never)")
      ->check(CLI::Range(-1.0, 86400.0));
  sub->add_option("--load-time", flags->load_time,
                  "Seconds the model's weights take to load at start (503 'Loading model' "
                  "meanwhile; scaled by --speed-factor)")
      ->check(CLI::Range(0.0, 86400.0));
  sub->add_option("--model-size", flags->model_size,
                  "Size of the model's weights (e.g. 20GiB): loading them takes size / "
                  "--load-rate more, after --load-time (503 'Loading model' meanwhile)");
  sub->add_option("--load-rate", flags->load_rate,
                  "Read rate of the weights with --model-size (e.g. 500MB/s; scaled by "
                  "--speed-factor)")
      ->capture_default_str();
  sub->add_option("--wake-time", flags->wake_time,
                  "vllm --sleep-mode: seconds POST /wake_up takes (scaled by --speed-factor)")
      ->check(CLI::Range(0.0, 86400.0));

  const std::string model = "Engine model (docs/sim.md)";
  sub->add_option("--slots,--parallel,--max-num-seqs", flags->slots,
                  "Sequences running at once; more requests wait (default 1)")
      ->check(CLI::Range(1, 1024))
      ->group(model);
  sub->add_option("--ctx-size,-c", flags->ctx_size,
                  "llamacpp: total context, split across slots (default 8192); vllm: as "
                  "--max-model-len")
      ->check(CLI::Range(16, 1 << 24))
      ->group(model);
  sub->add_option("--max-model-len", flags->max_model_len,
                  "vllm: longest sequence, prompt + output (default 8192)")
      ->check(CLI::Range(16, 1 << 24))
      ->group(model);
  sub->add_option("--tokens-per-second", flags->tokens_per_second,
                  "Decode speed of every sequence, whatever the batch (a flat decode curve; "
                  "default 65)")
      ->check(CLI::PositiveNumber)
      ->group(model);
  sub->add_option("--decode-curve", flags->decode_curve,
                  "Decode step time by batch size, interpolated: 'B:MS,B:MS,...' "
                  "(e.g. 1:31.5,4:31.7,8:48.7)")
      ->group(model);
  sub->add_option("--prefill-tokens-per-second", flags->prefill_tokens_per_second,
                  "Prompt processing speed at depth 0 (default 900)")
      ->check(CLI::PositiveNumber)
      ->group(model);
  sub->add_option("--prefill-half-depth", flags->prefill_half_depth,
                  "Context depth at which prefill runs at half speed (0: no slowdown; default 0)")
      ->check(CLI::NonNegativeNumber)
      ->group(model);
  sub->add_option("--kv-capacity-tokens", flags->kv_capacity_tokens,
                  "vllm: KV pool size in tokens (default 65536)")
      ->check(CLI::Range(1, INT_MAX))
      ->group(model);
  sub->add_option("--block-size", flags->block_size, "vllm: tokens per KV block (default 16)")
      ->check(CLI::Range(1, 4096))
      ->group(model);
  sub->add_option("--max-batched-tokens,--batch-size,--max-num-batched-tokens",
                  flags->max_batched_tokens,
                  "Tokens per engine step; longer prompts prefill in chunks (default 2048, "
                  "vllm 8192)")
      ->check(CLI::Range(1, INT_MAX))
      ->group(model);
  sub->add_flag("--no-prefix-cache", flags->no_prefix_cache, "Never reuse cached prefixes")
      ->group(model);
  sub->add_option("--cache-ram", flags->cache_ram,
                  "llamacpp: host-memory prompt cache in MiB: a slot's prompt is kept in RAM "
                  "when the slot takes another and restored for a similar prompt (0: off, -1: "
                  "no limit; default 8192, as llama-server)")
      ->check(CLI::Range(-1, INT_MAX))
      ->group(model);
  sub->add_option("--spec-draft-tokens", flags->spec_draft_tokens,
                  "Speculative decoding: draft tokens per step (0: off; MTP3 is 3)")
      ->check(CLI::Range(0, 16))
      ->group(model);
  sub->add_option("--spec-acceptance", flags->spec_acceptance,
                  "Speculative decoding: probability each draft token is accepted")
      ->check(CLI::Range(0.0, 0.999))
      ->group(model);
  sub->add_option("--over-report", flags->over_report,
                  "Inflate the self-reported generation speed by this factor (not the real one)")
      ->check(CLI::PositiveNumber)
      ->group(model);
  sub->add_option("--speed-factor", flags->speed_factor,
                  "Run this many times faster than the modelled engine (tests; default 1)")
      ->check(CLI::PositiveNumber)
      ->group(model);
  sub->add_option("--seed", flags->seed, "Seed for output text and lengths (default 42)")
      ->group(model);

  // Failure injection (sim/faults.h documents each exactly).
  auto& faults = flags->faults;
  const std::string group = "Failure injection";
  sub->add_option("--fail-before-first-byte", faults.fail_before_first_byte,
                  "Answer the first N completion requests 503 without taking a slot")
      ->check(CLI::Range(0, INT_MAX))
      ->group(group);
  auto* reset = sub->add_option("--reset-after-tokens", faults.reset_after_tokens,
                                "Reset the connection (TCP RST) after N tokens of each completion")
                    ->check(CLI::Range(0, INT_MAX))
                    ->group(group);
  sub->add_option("--stall-after-tokens", faults.stall_after_tokens,
                  "Send nothing more after N tokens of each completion; hold the slot until "
                  "the client leaves")
      ->check(CLI::Range(0, INT_MAX))
      ->excludes(reset)
      ->group(group);
  sub->add_option("--exit-after-requests", faults.exit_after_requests,
                  "Exit with status 3 right after the N-th completion request ends")
      ->check(CLI::Range(1, INT_MAX))
      ->group(group);
  sub->add_option("--exit-after-tokens", faults.exit_after_tokens,
                  "Exit with status 3 once the engine has produced N tokens in all")
      ->check(CLI::Range(1, INT_MAX))
      ->group(group);
  sub->add_option("--startup-delay", faults.startup_delay_seconds,
                  "Answer every request 503 'Loading model' for S seconds after start "
                  "(not scaled by --speed-factor)")
      ->check(CLI::Range(0.0, 3600.0))
      ->group(group);
  return {sub, [flags] { return run_sim(*flags); }};
}

}  // namespace switchyard::cli
