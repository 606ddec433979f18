// `switchyard sim`: a stand-in engine that speaks llama-server's HTTP API.
#include <CLI/CLI.hpp>
#include <boost/asio.hpp>

#include <climits>
#include <iostream>
#include <memory>

#include <spdlog/spdlog.h>

#include "cli/command.h"
#include "http/server.h"
#include "sim/engine.h"
#include "sim/llamacpp_api.h"

namespace switchyard::cli {

namespace {

struct SimFlags {
  std::string dialect = "llamacpp";
  std::string host = "127.0.0.1";
  int port = 8081;
  sim::EngineOptions engine;
  sim::LlamacppApiOptions api;
};

int run_sim(const SimFlags& flags) {
  boost::asio::io_context io;
  sim::Engine engine(io.get_executor(), flags.engine);
  sim::LlamacppApi api(engine, flags.api);
  http::ServerOptions server_options;
  server_options.address = flags.host;
  server_options.port = static_cast<std::uint16_t>(flags.port);
  server_options.server_name = "llama.cpp";
  http::Server server(io.get_executor(), api, server_options);
  auto port = server.listen();
  if (!port) {
    std::cerr << "switchyard sim: " << port.error().message << "\n";
    return 1;
  }
  server.start();
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](auto, int) { io.stop(); });
  // Parsed by the gateway's supervisor and by tests: keep the wording.
  spdlog::info("sim ({} dialect, {} slots, {} tok/s, speed x{}) listening on {}:{}", flags.dialect,
               flags.engine.slots, flags.engine.tokens_per_second, flags.engine.speed_factor,
               flags.host, *port);
  io.run();
  return 0;
}

}  // namespace

Command add_sim_command(CLI::App& app) {
  auto flags = std::make_shared<SimFlags>();
  auto* sub = app.add_subcommand(
      "sim", "A simulated engine (llama-server's API) for tests and demos without a GPU");
  sub->add_option("--dialect", flags->dialect, "API dialect to speak")
      ->check(CLI::IsMember({"llamacpp"}))
      ->capture_default_str();
  sub->add_option("--host", flags->host, "Address to listen on")->capture_default_str();
  sub->add_option("--port", flags->port, "Port to listen on (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  sub->add_option("--slots,--parallel", flags->engine.slots,
                  "Parallel sequences; more requests wait")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  sub->add_option("--ctx-size,-c", flags->engine.ctx_size, "Total context, split across slots")
      ->check(CLI::Range(16, 1 << 24))
      ->capture_default_str();
  sub->add_option("--tokens-per-second", flags->engine.tokens_per_second,
                  "Decode speed of one sequence")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--prefill-tokens-per-second", flags->engine.prefill_tokens_per_second,
                  "Prompt processing speed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--speed-factor", flags->engine.speed_factor,
                  "Run this many times faster than the modelled engine (tests)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--seed", flags->engine.seed, "Seed for output text and lengths")
      ->capture_default_str();
  sub->add_option("--alias,-a", flags->api.model_alias, "Model name the engine serves")
      ->capture_default_str();

  // Failure injection (sim/faults.h documents each exactly).
  auto& faults = flags->api.faults;
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
