#include "gateway/gateway.h"

#include <boost/asio.hpp>

#include <random>

#include <fmt/format.h>

#include "common/hex.h"
#include "gateway/chains.h"
#include "gateway/console_feed.h"
#include "gateway/dispatch.h"
#include "gateway/engine_watch.h"
#include "gateway/head_checks.h"
#include "gateway/key_service.h"
#include "gateway/local_routes.h"
#include "gateway/routes.h"
#include "openai/api_error.h"

namespace switchyard::gateway {

namespace net = boost::asio;
using net::awaitable;
using openai::ApiError;

namespace {

// A client's X-Request-Id when it is a sane token, else a fresh one.
std::string request_id(const http::Headers& headers, std::mt19937_64& rng) {
  if (auto given = headers.find("x-request-id"); given && !given->empty() && given->size() <= 64) {
    bool sane = true;
    for (unsigned char c : *given) sane &= std::isalnum(c) || c == '-' || c == '_' || c == '.';
    if (sane) return std::string(*given);
  }
  std::string id(16, '0');
  write_hex64(rng(), id.data());
  return id;
}

}  // namespace

struct Gateway::Impl {
  Impl(const config::FleetConfig& c, fleet::Fleet& f, obs::GatewayMetrics& m,
       net::any_io_executor executor, tenancy::StoredKeys stored)
      : config(c),
        fleet(f),
        metrics(m),
        key_service(executor, c, std::move(stored), m),
        dispatch(executor, c, fleet, metrics),
        feed(executor,
             [this] {
               const auto s = local.snapshot();
               ConsoleFeed::Gauges g;
               for (const auto& i : s.instances) g.tokens_per_second += i.tokens_per_second;
               for (const auto& m : s.models) g.queued += m.queued;
               return g;
             }),
        watch(executor, fleet.instances(), c.health.metrics_interval, dispatch.router()),
        head(config, key_service.table()),
        local({config, fleet, metrics, key_service, dispatch, feed, watch, head.admin, chains,
               draining}),
        rng(std::random_device{}()),
        chains({executor, config, fleet, metrics, key_service.table(), dispatch, feed, draining},
               local) {
    if (const auto& shared = key_service.shared_limits())
      chains.admit.share_limits(shared, c.redis_down == config::FleetConfig::RedisDown::local);
    // A new key table: limits apply at once; requests of a key that is gone
    // or revoked are refused, queued ones included.
    key_service.start({.changed =
                           [this](const std::vector<std::string>& gone) {
                             chains.admit.keys_changed();
                             for (const auto& name : gone) dispatch.queue().refuse_key(name);
                           },
                       .released = [this](const std::string& key) { chains.admit.wake(key); }});
    // An instance that turns ready may serve waiting requests; one that is
    // ejected hands back the requests it has not started answering.
    fleet.on_change([this](const fleet::Instance& inst) {
      if (inst.routable()) dispatch.queue().dispatch(inst.model());
      if (inst.state == fleet::InstanceState::ejected)
        chains.forwarder.abandon_unanswered(inst.index);
      feed.changed();  // the dashboard shows it now
    });
    fleet.on_engine_state([this](const fleet::Instance& inst, const EngineState& state) {
      dispatch.engine_state(inst, state);
    });
  }

  ~Impl() {
    fleet.on_change(nullptr);
    fleet.on_engine_state(nullptr);
    key_service.stop();
  }
  awaitable<void> handle(http::Request& request, http::Exchange& exchange);

  config::FleetConfig config;  // replaced field by field on reload()
  fleet::Fleet& fleet;
  obs::GatewayMetrics& metrics;
  KeyService key_service;  // YAML, SQLite and Redis keys assembled; Redis's limits
  Dispatch dispatch;       // the router, the queues, the profile and model gates
  ConsoleFeed feed;        // the dashboard's requests and charts
  EngineWatch watch;       // each ready engine's /metrics and the advisor's checks on them
  HeadChecks head;         // method, admin door, API key: before the body is read
  bool draining = false;
  LocalRoutes local;    // the routes the gateway answers itself: the local chain's end
  std::mt19937_64 rng;  // request ids
  Chains chains;        // the stages and the two chains
};

Gateway::Gateway(net::any_io_executor executor, const config::FleetConfig& config,
                 tenancy::StoredKeys stored_keys, fleet::Fleet& fleet, obs::GatewayMetrics& metrics)
    : impl_(std::make_unique<Impl>(config, fleet, metrics, executor, std::move(stored_keys))) {}
Gateway::~Gateway() = default;

std::string Gateway::reload(const config::FleetConfig& next) {
  auto& g = *impl_;
  const auto changes = g.fleet.apply(next);
  g.config.gpus = next.gpus;
  g.config.swapping = next.swapping;
  g.config.memory_estimates = next.memory_estimates;
  if (SwitchGate* gate = g.dispatch.reload(next, changes.removed)) g.chains.route.add_gate(gate);
  g.chains.route.set_hold_progress(next.swapping.progress);
  g.chains.catalog = ModelCatalog(next.models);
  g.config.models = next.models;
  g.config.api_keys = next.api_keys;
  g.config.static_keys = next.static_keys;
  g.key_service.set_statics(next.static_keys);
  g.config.attempts = next.attempts;
  g.config.retry_budget = next.retry_budget;
  g.config.health_detail_public = next.health_detail_public;
  g.config.instances = next.instances;
  g.chains.forward_options = ForwardOptions{next.attempts, next.retry_budget};
  return fmt::format("{} instance(s) added, {} removed; {} model(s)", changes.added.size(),
                     changes.removed.size(), next.models.size());
}

void Gateway::begin_drain() {
  impl_->draining = true;
}
void Gateway::stop_waiting() {
  impl_->chains.admit.release_all();
  impl_->dispatch.queue().release_all();
}
void Gateway::end_running(std::chrono::milliseconds drain) {
  impl_->chains.forwarder.end_running(drain);
}

std::optional<http::Response> Gateway::screen(http::RequestHead& head) {
  const Route* route = find_route(head.target);
  auto refusal =
      route ? impl_->head.run(head, *route)
            : openai::error_response(ApiError::not_found(
                  fmt::format("no route for {} {}", head.method, head.path()), "unknown_url"));
  if (refusal) {
    refusal->headers.add("X-Request-Id", request_id(head.headers, impl_->rng));
    impl_->chains.accounting.refused(head, *refusal->headers.find("x-request-id"), refusal->status);
  }
  return refusal;
}

http::Response Gateway::protocol_error(int status, std::string message, std::string_view path) {
  ApiError e = status == 413 ? ApiError::too_large(std::move(message))
                             : ApiError{status,
                                        std::move(message),
                                        status >= 500 ? "server_error" : "invalid_request_error",
                                        {},
                                        {}};
  const Route* route = path.empty() ? nullptr : find_route(path);
  http::Response r = openai::error_response(e, route ? route->dialect : openai::Dialect::openai);
  r.headers.add("X-Request-Id", request_id({}, impl_->rng));
  return r;
}

awaitable<void> Gateway::handle(http::Request& request, http::Exchange& exchange) {
  return impl_->handle(request, exchange);
}

awaitable<void> Gateway::Impl::handle(http::Request& request, http::Exchange& exchange) {
  const Route& route = *find_route(request.head.target);  // screen() made sure it exists
  RequestContext ctx(request, exchange, route);
  ctx.record.id = request_id(request.head.headers, rng);
  ctx.record.bytes_in = request.body.size();
  if (route.forwarded() && chains.tracing) ctx.trace = chains.tracing->start(request.head);
  co_await (route.forwarded() ? chains.proxy : chains.local).run(ctx);
}

}  // namespace switchyard::gateway
