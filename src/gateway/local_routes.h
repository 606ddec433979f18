// The routes the gateway answers itself, which the route table names
// (gateway/routes.cpp): the model list and model events, /health, /metrics,
// /, the dashboard and its event stream, the admin API and its login. They
// are the local chain's last stage: the request's route answers it.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "config/fleet_config.h"
#include "fleet/fleet.h"
#include "gateway/admin_gate.h"
#include "gateway/chains.h"
#include "gateway/console_feed.h"
#include "gateway/dispatch.h"
#include "gateway/engine_watch.h"
#include "gateway/key_service.h"
#include "gateway/keys_routes.h"
#include "gateway/pipeline.h"
#include "obs/gateway_metrics.h"
#include "obs/status.h"

namespace switchyard::gateway {

// What the local routes read; every reference must outlive them. `chains`
// may be bound before it is built: the routes read it only when they answer.
struct LocalParts {
  const config::FleetConfig& config;
  fleet::Fleet& fleet;
  obs::GatewayMetrics& metrics;
  const KeyService& keys;
  Dispatch& dispatch;
  ConsoleFeed& feed;
  const EngineWatch& watch;
  AdminGate& admin;
  Chains& chains;
  const bool& draining;
};

class LocalRoutes final : public WaitingStage {
 public:
  explicit LocalRoutes(const LocalParts& parts) : p_(parts) {}

  // Runs the route's handler.
  boost::asio::awaitable<Verdict> run(RequestContext& ctx) override;

  boost::asio::awaitable<void> models(RequestContext& ctx);          // GET /v1/models, /models
  boost::asio::awaitable<void> model(RequestContext& ctx);           // GET /v1/models/{id}
  boost::asio::awaitable<void> model_events(RequestContext& ctx);    // GET /models/sse
  boost::asio::awaitable<void> router_props(RequestContext& ctx);    // GET /props
  boost::asio::awaitable<void> health(RequestContext& ctx);          // GET /health
  boost::asio::awaitable<void> metrics(RequestContext& ctx);         // GET /metrics
  boost::asio::awaitable<void> root(RequestContext& ctx);            // GET and HEAD /
  boost::asio::awaitable<void> page(RequestContext& ctx);            // GET /ui, /ui/<file>
  boost::asio::awaitable<void> console_events(RequestContext& ctx);  // GET /admin/events
  boost::asio::awaitable<void> admin(
      RequestContext& ctx);  // the admin API (gateway/admin_routes.h)
  boost::asio::awaitable<void> login(RequestContext& ctx);  // POST /admin/login

  // The status /health, /metrics, the dashboard and the admin API show.
  obs::StatusSnapshot snapshot() const;

 private:
  boost::asio::awaitable<void> respond(RequestContext& ctx, http::Response reply);
  // Whether the request may see instance detail (names, URLs) in /health.
  bool sees_detail(const http::RequestHead& head) const;
  std::vector<profiles::ModelState> model_states() const;
  KeysView keys_view();

  LocalParts p_;
};

}  // namespace switchyard::gateway
