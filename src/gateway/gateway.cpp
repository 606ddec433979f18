#include "gateway/gateway.h"

#include <boost/asio.hpp>

#include <random>
#include <set>

#include <fmt/compile.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gateway/accounting.h"
#include "gateway/admission.h"
#include "gateway/api_keys.h"
#include "gateway/forwarder.h"
#include "gateway/info_routes.h"
#include "gateway/model_catalog.h"
#include "gateway/pipeline.h"
#include "gateway/resolve.h"
#include "gateway/route_stage.h"
#include "gateway/router.h"
#include "gateway/routes.h"
#include "gateway/status.h"
#include "gateway/wait_queue.h"
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
  return fmt::format(FMT_COMPILE("{:016x}"), rng());  // per request: no format parsing
}

}  // namespace

struct Gateway::Impl {
  Impl(const fleet::FleetConfig& c, fleet::Fleet& f, obs::GatewayMetrics& m,
       net::any_io_executor executor)
      : executor(executor),
        config(c),
        fleet(f),
        metrics(m),
        keys(c.api_keys),
        catalog(c.models),
        forward_options{c.attempts, c.retry_budget},
        router(fleet.instances(), make_routing_policy(c.routing)),
        queue(executor, router, c.queue),
        resolve(catalog),
        admit(draining),
        route(router, queue, config.queue, metrics, config.routing),
        forwarder(Upstreams{fleet.instances(),
                            [this](std::size_t i, const std::string& why) {
                              fleet.report_failure(i, why);
                            },
                            [this](std::size_t i) { fleet.report_success(i); }},
                  route, forward_options, metrics),
        accounting(metrics),
        pipeline({&resolve, &admit, &route, &forwarder}),
        rng(std::random_device{}()) {
    // A freed slot goes to the next waiter of its model; a removed instance
    // is stopped once its last request is done.
    router.on_release([this](std::size_t index, const std::string& model) {
      queue.dispatch(model);
      if (router.in_flight(index) == 0 && retiring.erase(index)) stop_instance(index);
    });
    // An instance that turns ready may serve waiting requests; one that is
    // ejected hands back the requests it has not started answering.
    fleet.on_change([this](const fleet::Instance& inst) {
      if (inst.routable()) queue.dispatch(inst.model());
      if (inst.state == fleet::InstanceState::ejected) forwarder.abandon_unanswered(inst.index);
    });
  }

  ~Impl() {
    // Leases may be released after this (frames destroyed at shutdown): the
    // queue they would wake is gone.
    router.on_release(nullptr);
    fleet.on_change(nullptr);
  }
  void stop_instance(std::size_t index) {
    net::co_spawn(executor, fleet.stop_instance(index), net::detached);
  }
  obs::StatusSnapshot snapshot() const {
    return take_snapshot(fleet.instances(), router, queue, catalog, draining);
  }
  // Whether the request may see instance detail (names, URLs) in /health.
  bool sees_detail(const http::RequestHead& head) const {
    return !keys.enabled() || config.health_detail_public || keys.allows(head.headers);
  }
  awaitable<void> handle(http::Request request, http::Exchange& exchange);
  http::Response local_response(const Route& route, const http::RequestHead& head) const;

  net::any_io_executor executor;
  fleet::FleetConfig config;  // replaced field by field on reload()
  fleet::Fleet& fleet;
  obs::GatewayMetrics& metrics;
  ApiKeys keys;
  ModelCatalog catalog;
  ForwardOptions forward_options;
  bool draining = false;
  Router router;
  WaitQueue queue;
  // The stages, in the order the pipeline runs them.
  Resolve resolve;
  Admit admit;
  RouteStage route;
  Forwarder forwarder;
  Accounting accounting;
  Pipeline pipeline;
  std::mt19937_64 rng;
  std::set<std::size_t> retiring;  // removed by a reload, still finishing requests
};

Gateway::Gateway(net::any_io_executor executor, const fleet::FleetConfig& config,
                 fleet::Fleet& fleet, obs::GatewayMetrics& metrics)
    : impl_(std::make_unique<Impl>(config, fleet, metrics, executor)) {}
Gateway::~Gateway() = default;

std::string Gateway::reload(const fleet::FleetConfig& next) {
  auto& g = *impl_;
  const auto changes = g.fleet.apply(next);
  for (auto i : changes.removed) {
    if (g.router.in_flight(i) == 0)
      g.stop_instance(i);
    else
      g.retiring.insert(i);
  }
  g.catalog = ModelCatalog(next.models);
  g.keys = ApiKeys(next.api_keys);
  g.config.models = next.models;
  g.config.api_keys = next.api_keys;
  g.config.attempts = next.attempts;
  g.config.retry_budget = next.retry_budget;
  g.config.health_detail_public = next.health_detail_public;
  g.config.instances = next.instances;
  g.forward_options = ForwardOptions{next.attempts, next.retry_budget};
  return fmt::format("{} instance(s) added, {} removed; {} model(s)", changes.added.size(),
                     changes.removed.size(), next.models.size());
}

void Gateway::begin_drain() {
  impl_->draining = true;
}
void Gateway::stop_waiting() {
  impl_->queue.release_all();
}

std::optional<http::Response> Gateway::screen(const http::RequestHead& head) {
  // The head-only stages: screen (path, method) and authenticate.
  const Route* route = find_route(head.path());
  std::optional<http::Response> refusal;
  const auto dialect = route ? route->dialect : openai::Dialect::openai;
  if (!route) {
    refusal = openai::error_response(ApiError::not_found(
        fmt::format("no route for {} {}", head.method, head.path()), "unknown_url"));
  } else if (head.method != route->method) {
    refusal =
        openai::error_response(ApiError::method_not_allowed(fmt::format(
                                   "{} takes {}, not {}", route->path, route->method, head.method)),
                               dialect);
    refusal->headers.add("Allow", std::string(route->method));
  } else if (route->needs_key && !impl_->keys.allows(head.headers)) {
    refusal = openai::error_response(
        ApiError::unauthorized(ApiKeys::presented(head.headers)
                                   ? "the API key is not valid"
                                   : "an API key is required: send 'Authorization: Bearer <key>' "
                                     "or 'x-api-key: <key>'"),
        dialect);
  }
  if (refusal) {
    refusal->headers.add("X-Request-Id", request_id(head.headers, impl_->rng));
    spdlog::info("access id={} {} {} status={} refused before the body",
                 *refusal->headers.find("x-request-id"), head.method, head.target, refusal->status);
  }
  return refusal;
}

http::Response Gateway::protocol_error(int status, std::string message) {
  ApiError e = status == 413 ? ApiError::too_large(std::move(message))
                             : ApiError{status,
                                        std::move(message),
                                        status >= 500 ? "server_error" : "invalid_request_error",
                                        {},
                                        {}};
  http::Response r = openai::error_response(e);
  r.headers.add("X-Request-Id", request_id({}, impl_->rng));
  return r;
}

awaitable<void> Gateway::handle(http::Request request, http::Exchange& exchange) {
  return impl_->handle(std::move(request), exchange);
}

awaitable<void> Gateway::Impl::handle(http::Request request, http::Exchange& exchange) {
  const Route& route = *find_route(request.head.path());  // screen() made sure it exists
  RequestContext ctx(request, exchange, route);
  ctx.record.id = request_id(request.head.headers, rng);
  ctx.record.bytes_in = request.body.size();
  if (route.kind == RouteKind::proxy) {
    co_await pipeline.run(ctx);
    if (ctx.record.usage) router.finished(ctx.lease, *ctx.record.usage);
  } else {
    http::Response reply = local_response(route, request.head);
    reply.headers.add("X-Request-Id", ctx.record.id);
    ctx.record.status = reply.status;
    ctx.record.bytes_out = reply.body.size();
    if (!co_await exchange.respond(std::move(reply))) ctx.record.client_gone = true;
  }
  accounting.finish(request.head, ctx.record);
}

http::Response Gateway::Impl::local_response(const Route& route,
                                             const http::RequestHead& head) const {
  switch (route.kind) {
    case RouteKind::models:
      return models_response(catalog, fleet.instances());
    case RouteKind::model:
      return model_response(head.path().substr(route.path.size()), catalog, fleet.instances());
    case RouteKind::health:
      return health_response(snapshot(), sees_detail(head));
    case RouteKind::metrics: {
      http::Response reply = http::json_response(200, metrics.render(snapshot()));
      reply.headers.set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
      return reply;
    }
    case RouteKind::proxy:
      break;
  }
  return openai::error_response(ApiError::internal("no local handler for this route"));
}

}  // namespace switchyard::gateway
