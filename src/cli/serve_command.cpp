// `switchyard serve`: the gateway in front of a fleet of engines.
#include <CLI/CLI.hpp>
#include <boost/asio.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "cli/command.h"
#include "cli/fleet_memory.h"
#include "cli/service_notice.h"
#include "common/buffered_log.h"
#include "common/json_log.h"
#include "common/sd_notify.h"
#include "config/fleet_config.h"
#include "fleet/config_check.h"
#include "fleet/fleet.h"
#include "gateway/admin_access.h"
#include "gateway/gateway.h"
#include "http/server.h"
#include "obs/gateway_metrics.h"
#include "tenancy/key_store.h"

namespace switchyard::cli {

namespace net = boost::asio;

namespace {

// How long the requests the drain's cutoff ended get to write their last
// event or 503 before the engines stop (a client that reads nothing).
constexpr std::chrono::milliseconds kEndRunningWithin{2000};

struct ServeFlags {
  std::string config_path;
  std::string listen;  // overrides the config's
  bool check = false;  // validate the config and the commands' programs, start nothing
};

// "127.0.0.1:8080" or "[::1]:8080" into address and port.
Result<std::pair<std::string, std::uint16_t>> split_listen(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 == text.size())
    return Error{"listen address '" + text + "' needs a port, e.g. 127.0.0.1:8080"};
  std::string host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";
  unsigned port = 0;
  const char* first = text.data() + colon + 1;
  const char* last = text.data() + text.size();
  auto [end, ec] = std::from_chars(first, last, port);
  if (ec != std::errc() || end != last || port > 65535)
    return Error{"listen address '" + text + "': the port must be a number from 0 to 65535"};
  return std::pair{host, static_cast<std::uint16_t>(port)};
}

// Raises the soft descriptor limit to the hard one (often 1024 against
// 524288): a gateway holds two descriptors per proxied request. Returns the
// limit in force.
std::uint64_t raise_fd_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  return limit.rlim_cur == RLIM_INFINITY ? std::uint64_t{1} << 20 : limit.rlim_cur;
}

std::string self_path(const char* fallback) {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? fallback : p.string();
}

// serve --check: 0 when the config would start, else 2 with a line per problem. Prints what each
// instance needs of its GPUs and which instances can never be resident together.
int check_config(config::FleetConfig config, const std::string& path) {
  const auto problems = fleet::missing_executables(config, self_path("switchyard"));
  for (const auto& p : problems) std::cerr << "switchyard serve: " << path << ": " << p << "\n";
  if (!problems.empty()) return 2;
  const auto memory = serve_memory(config);
  if (!memory) {
    std::cerr << "switchyard serve: " << memory.error().message << "\n";
    return 2;
  }
  std::cout << fmt::format("{}: ok ({} instance(s), {} model(s))\n", path, config.instances.size(),
                           config.models.size());
  for (const auto& line : memory->lines) std::cout << "  " << line << "\n";
  for (const auto& clash : memory->clashes) {
    std::cout << "  never resident together: " << clash_text(clash) << "\n";
  }
  return 0;
}

int run_serve(const ServeFlags& flags) {
  auto config = config::load_fleet_config(flags.config_path);
  if (!config) {
    std::cerr << "switchyard serve: " << config.error().message << "\n";
    return 2;
  }
  if (!flags.listen.empty()) config->listen = flags.listen;
  auto listen = split_listen(config->listen);
  if (!listen) {
    std::cerr << "switchyard serve: " << listen.error().message << "\n";
    return 2;
  }
  if (flags.check) return check_config(*config, flags.config_path);
  const auto memory = serve_memory(*config);
  if (!memory) {
    std::cerr << "switchyard serve: " << memory.error().message << "\n";
    return 2;
  }
  for (const auto& line : memory->lines) spdlog::info("{}", line);
  for (const auto& clash : memory->clashes) {
    spdlog::info("never resident together: {}", clash_text(clash));
  }
  config->memory_estimates = handover(*memory);

  // The keys and the usage ledger: created or upgraded before the first
  // request, and the keys read whole. A key store that cannot be read stops
  // the gateway: serving without its keys would serve everyone.
  auto stored_keys = tenancy::load_stored_keys(config->state_db);
  if (!stored_keys) {
    std::cerr << "switchyard serve: state_db: " << stored_keys.error().message
              << " (the API keys cannot be read; refusing to start without them)\n";
    return 2;
  }

  // Read (and unset) before any engine is started, so none inherits it.
  SdNotifier notifier;
  try {
    notifier = SdNotifier::from_environment();
  } catch (const std::exception& e) {
    std::cerr << "switchyard serve: " << e.what() << "\n";
    return 2;
  }

  // One I/O thread: the router, queue and pools are not locked, and no
  // socket is used from another thread, so Asio's per-socket locks are off
  // too (two lock/unlock pairs a relayed chunk). Other threads only post.
  net::io_context io(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO);
  // A terminal gets each line as it is logged; a file or pipe gets them in
  // batches, each written within 50 ms of its first line. Nothing logged,
  // no wake-up (a timer every 50 ms was most of an idle gateway's).
  if (!isatty(STDOUT_FILENO)) use_buffered_stdout_log();
  if (config->log.format == config::LogOptions::Format::json) use_json_log();
  net::steady_timer log_flush(io);
  bool log_flush_armed = false;
  const BufferedLogHook flush_log_soon([&] {
    net::post(io, [&] {
      if (std::exchange(log_flush_armed, true)) return;
      log_flush.expires_after(std::chrono::milliseconds(50));
      log_flush.async_wait([&](const boost::system::error_code& ec) {
        log_flush_armed = false;
        if (!ec) spdlog::default_logger()->flush();
      });
    });
  });
  obs::GatewayMetrics metrics;
  fleet::Fleet fleet(io.get_executor(), *config, self_path("switchyard"));
  gateway::Gateway gateway(io.get_executor(), *config, std::move(*stored_keys), fleet, metrics);

  http::ServerOptions options;
  options.address = listen->first;
  options.port = listen->second;
  options.body_limit = config->body_limit;
  options.header_timeout = config->timeouts.client_header;
  options.body_timeout = config->timeouts.client_body;
  const std::uint64_t fd_limit = raise_fd_limit();
  options.max_connections =
      config->max_connections.value_or(config::default_max_connections(fd_limit, *config));
  // Probes and scrapes still get through at the cap (from the descriptors
  // the derived cap keeps in reserve).
  options.probe_paths = {"/health", "/metrics"};
  spdlog::info("descriptor limit {}; at most {} client connection(s){}", fd_limit,
               options.max_connections, config->max_connections ? "" : " (derived from it)");
  http::Server server(io.get_executor(), gateway, options);
  auto port = server.listen();
  if (!port) {
    std::cerr << "switchyard serve: " << port.error().message << "\n";
    return 1;
  }
  if (options.address == "0.0.0.0" || options.address == "::")
    spdlog::warn(
        "listening on every network interface ({}): other hosts can reach the "
        "gateway; use 127.0.0.1:PORT to keep it local",
        options.address);
  if (config->admin_key.empty() && !gateway::is_loopback(options.address + ":0"))
    spdlog::warn(
        "no admin_key while listening on {}: the admin API and dashboard trust the client's "
        "address alone (loopback clients, no key), so a reverse proxy or tunnel on this host "
        "opens them to whoever reaches it; set admin_key in the fleet config",
        options.address);
  // Registered before the line that says the gateway listens: a signal
  // sent once that line is read (a reload script, a test) is queued for
  // the handlers below, not fatal by default.
  net::signal_set signals(io, SIGINT, SIGTERM);
  net::signal_set hangup(io, SIGHUP);
  fleet.start();
  server.start();
  // Tests and scripts read this line for the port: keep its wording.
  spdlog::info("switchyard gateway listening on http://{}:{} ({} instance(s), {} model(s))",
               options.address, *port, config->instances.size(), config->models.size());
  // What a new user does next (make run's first screen).
  const bool wildcard = options.address == "0.0.0.0" || options.address == "::";
  const std::string host = wildcard ? "127.0.0.1" : options.address;
  const std::string base = host.find(':') == std::string::npos
                               ? fmt::format("http://{}:{}", host, *port)
                               : fmt::format("http://[{}]:{}", host, *port);
  spdlog::info("dashboard: {}/ui", base);
  cli::ServiceNotice notice(io.get_executor(), std::move(notifier), fleet.instances());
  notice.listening(fmt::format("listening on {}", base));
  spdlog::info(
      "try: curl -s {}/v1/chat/completions -H 'Content-Type: application/json' -d "
      "'{{\"model\":\"{}\",\"messages\":[{{\"role\":\"user\",\"content\":\"Hello\"}}]}}'",
      base, config->models.front().name);
  spdlog::default_logger()->flush();

  // SIGINT/SIGTERM: stop accepting, let in-flight requests finish within
  // timeouts.drain, stop the engines, exit. A second signal skips the wait.
  bool draining = false;
  std::function<void()> wait_signal = [&] {
    signals.async_wait([&](const boost::system::error_code& ec, int sig) {
      if (ec) return;
      if (draining) {
        spdlog::warn("second signal: not waiting for in-flight requests");
        draining = false;  // the drain loop below sees this and stops waiting
        return;
      }
      draining = true;
      notice.stopping();
      spdlog::info("signal {}: draining {} request(s)", sig, server.active_requests());
      server.stop_accepting();
      gateway.begin_drain();
      wait_signal();
      net::co_spawn(
          io,
          [&]() -> net::awaitable<void> {
            net::steady_timer tick(io);
            // Until no request runs, `until`, or (`on_signal`) a second signal.
            const auto settle = [&](std::chrono::milliseconds within,
                                    bool on_signal) -> net::awaitable<void> {
              const auto until = std::chrono::steady_clock::now() + within;
              while ((draining || !on_signal) && server.active_requests() > 0 &&
                     std::chrono::steady_clock::now() < until) {
                tick.expires_after(std::chrono::milliseconds(20));
                co_await tick.async_wait(net::as_tuple(net::use_awaitable));
              }
            };
            co_await settle(config->timeouts.drain, true);
            if (server.active_requests() > 0) {
              spdlog::warn(
                  "{} request(s) still in flight after timeouts.drain; the gateway ends them "
                  "(shutting_down) before it stops the engines",
                  server.active_requests());
              gateway.stop_waiting();
              gateway.end_running(config->timeouts.drain);
              // Their last events or 503s are written before the engines go.
              co_await settle(kEndRunningWithin, false);
            }
            co_await fleet.stop();
            signals.cancel();
            hangup.cancel();
            log_flush.cancel();
            io.stop();
          },
          net::detached);
    });
  };
  wait_signal();

  // SIGHUP: reload the config file; an invalid one is rejected, the old kept.
  std::function<void()> wait_hangup = [&] {
    hangup.async_wait([&](const boost::system::error_code& ec, int) {
      if (ec || draining) return;
      notice.reloading();
      auto next = config::load_fleet_config(flags.config_path);
      if (next && !flags.listen.empty()) next->listen = flags.listen;
      if (next) {
        const auto memory = serve_memory(*next);
        if (!memory) {
          next = memory.error();
        } else {
          for (const auto& line : memory->lines) spdlog::info("{}", line);
          next->memory_estimates = handover(*memory);
        }
      }
      if (!next) {
        spdlog::error("config reload rejected, keeping the running config: {}",
                      next.error().message);
      } else {
        // Settings that only a restart applies keep their running values
        // everywhere (pools, supervisors, server), so none is applied halfway.
        const auto restart_only = config::restart_only_changes(*config, *next);
        if (!restart_only.empty())
          spdlog::warn("config reload: not applied until restart: {}",
                       fmt::format("{}", fmt::join(restart_only, ", ")));
        *config = config::keep_restart_only_settings(*config, std::move(*next));
        spdlog::info("config reloaded from {}: {}", flags.config_path, gateway.reload(*config));
      }
      notice.reloaded();
      wait_hangup();
    });
  };
  wait_hangup();
  io.run();
  spdlog::info("switchyard gateway stopped");
  spdlog::default_logger()->flush();
  return 0;
}

}  // namespace

Command add_serve_command(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  auto* sub = app.add_subcommand("serve", "Run the gateway in front of a fleet of engines");
  sub->add_option("-c,--config", flags->config_path, "Fleet configuration (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--listen", flags->listen,
                  "Address:port to listen on, overriding the config (port 0: any free port)");
  sub->add_flag("--check", flags->check,
                "Validate the config and that the commands' programs exist, start nothing "
                "(exit 0 when it would start, 2 when not)");
  return {sub, [flags] { return run_serve(*flags); }};
}

}  // namespace switchyard::cli
