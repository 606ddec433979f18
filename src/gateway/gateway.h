// The serve pipeline as an HTTP handler: authenticate → inspect → resolve
// the model → route to an instance with a free slot → forward and relay →
// account. Sessions and sockets stay in src/http.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <memory>

#include "config/fleet_config.h"
#include "fleet/fleet.h"
#include "http/exchange.h"
#include "obs/gateway_metrics.h"
#include "tenancy/key_watcher.h"

namespace switchyard::gateway {

class Gateway final : public http::Handler {
 public:
  // `fleet` and `metrics` must outlive the gateway. Subscribes to the fleet's
  // state changes. Runs on `executor` (one thread). `stored_keys`: the
  // state_db's keys, read whole before (tenancy::load_stored_keys: a gateway
  // whose key store cannot be read does not start).
  Gateway(boost::asio::any_io_executor executor, const config::FleetConfig& config,
          tenancy::StoredKeys stored_keys, fleet::Fleet& fleet, obs::GatewayMetrics& metrics);
  ~Gateway() override;

  // Applies a new config (SIGHUP) without dropping a request: models and
  // aliases, API keys, attempts, retry_budget, health_detail, instances
  // (added ones start, on-demand ones unloaded; removed ones finish what
  // they have, then stop), and the on-demand models' gpus, swapping and
  // memory figures.
  // Settings only a restart applies are the caller's to keep
  // (config::keep_restart_only_settings). Returns a one-line summary.
  std::string reload(const config::FleetConfig& config);

  // Shutdown, step 1: new requests get 503; in-flight and queued ones go on.
  void begin_drain();
  // Shutdown, step 2 (drain deadline): queued requests get 503 now.
  void stop_waiting();
  // Shutdown, step 3 (drain deadline, before the engines stop): requests
  // still forwarding are ended by the gateway, their message naming
  // timeouts.drain (`drain`), code shutting_down: a stream's error event in
  // the route's dialect, else a 503.
  void end_running(std::chrono::milliseconds drain);

  std::optional<http::Response> screen(http::RequestHead& head) override;
  boost::asio::awaitable<void> handle(http::Request& request, http::Exchange& exchange) override;
  http::Response protocol_error(int status, std::string message, std::string_view path) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard::gateway
