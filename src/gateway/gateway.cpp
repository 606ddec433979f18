#include "gateway/gateway.h"

#include <boost/asio.hpp>

#include <random>

#include <fmt/compile.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gateway/admin_gate.h"
#include "gateway/admin_routes.h"
#include "gateway/chains.h"
#include "gateway/console_feed.h"
#include "gateway/console_routes.h"
#include "gateway/console_status.h"
#include "gateway/dispatch.h"
#include "gateway/engine_watch.h"
#include "gateway/info_routes.h"
#include "gateway/key_service.h"
#include "gateway/keys_routes.h"
#include "gateway/routes.h"
#include "gateway/status.h"
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
  Impl(const config::FleetConfig& c, fleet::Fleet& f, obs::GatewayMetrics& m,
       net::any_io_executor executor, tenancy::StoredKeys stored)
      : config(c),
        fleet(f),
        metrics(m),
        key_service(executor, c, std::move(stored), m),
        dispatch(executor, c, fleet, metrics),
        feed(executor,
             [this] {
               const auto s = snapshot();
               ConsoleFeed::Gauges g;
               for (const auto& i : s.instances) g.tokens_per_second += i.tokens_per_second;
               for (const auto& m : s.models) g.queued += m.queued;
               return g;
             }),
        watch(executor, fleet.instances(), c.health.metrics_interval, dispatch.router()),
        admin(config),
        answer_locally(*this),
        rng(std::random_device{}()),
        chains({executor, config, fleet, metrics, key_service.table(), dispatch, feed, draining},
               answer_locally) {
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
  }

  ~Impl() {
    fleet.on_change(nullptr);
    key_service.stop();
  }
  const ApiKeys& keys() const { return key_service.table(); }
  obs::StatusSnapshot snapshot() const {
    auto s = take_snapshot(fleet.instances(), dispatch.router(), dispatch.queue(), chains.catalog,
                           draining);
    add_console_status(s, metrics.generation(), watch.advisor());
    if (dispatch.profiles()) s.profiles = dispatch.profiles()->status();
    s.redis = key_service.redis_status();
    return s;
  }
  AdminView admin_view() {
    return AdminView{
        fleet,    dispatch.profiles(),           dispatch.models(),
        draining, [this] { return snapshot(); }, [this] { return keys_body(keys_view()); }};
  }
  KeysView keys_view() {
    return KeysView{keys(), key_service.records(), chains.admit, chains.record_usage.today()};
  }
  std::vector<profiles::ModelState> model_states() const {
    return dispatch.models() ? dispatch.models()->residency().models()
                             : std::vector<profiles::ModelState>{};
  }
  // Whether the request may see instance detail (names, URLs) in /health.
  bool sees_detail(const http::RequestHead& head) const {
    return !keys().enabled() || config.health_detail_public || keys().allows(head.headers);
  }
  awaitable<void> handle(http::Request& request, http::Exchange& exchange);
  http::Response local_response(const Route& route, const http::RequestHead& head) const;

  // The last stage of the routes the gateway answers itself: the dashboard's
  // event stream, the admin API, and the status and model routes.
  class AnswerLocally final : public Stage {
   public:
    explicit AnswerLocally(Impl& g) : g_(g) {}
    awaitable<Verdict> run(RequestContext& ctx) override;

   private:
    Impl& g_;
  };

  config::FleetConfig config;  // replaced field by field on reload()
  fleet::Fleet& fleet;
  obs::GatewayMetrics& metrics;
  KeyService key_service;  // YAML, SQLite and Redis keys assembled; Redis's limits
  Dispatch dispatch;       // the router, the queues, the profile and model gates
  ConsoleFeed feed;        // the dashboard's requests and charts
  EngineWatch watch;       // each ready engine's /metrics and the advisor's checks on them
  AdminGate admin;         // who may use the admin routes; the dashboard's logins
  bool draining = false;
  AnswerLocally answer_locally;
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
  g.dispatch.retire(changes.removed);
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
  // The head-only stages: screen (path, method) and authenticate.
  const Route* route = find_route(head.path());
  std::optional<http::Response> refusal;
  const auto dialect = route ? route->dialect : openai::Dialect::openai;
  if (!route) {
    refusal = openai::error_response(ApiError::not_found(
        fmt::format("no route for {} {}", head.method, head.path()), "unknown_url"));
  } else if (!route->allows(head.method)) {
    refusal =
        openai::error_response(ApiError::method_not_allowed(fmt::format(
                                   "{} takes {}, not {}", route->path, route->method, head.method)),
                               dialect);
    refusal->headers.add("Allow", std::string(route->method));
  } else if (route->kind == RouteKind::ui || route->kind == RouteKind::events ||
             route->kind == RouteKind::admin) {
    if (auto refused = impl_->admin.screen(head, *route))
      refusal = openai::error_response(*refused);
  } else if (route->needs_key && impl_->keys().enabled()) {
    const KeyEntry* key = impl_->keys().find(head.headers);
    head.screen_note = impl_->keys().note(key);
    if (!key)
      refusal = openai::error_response(
          ApiError::unauthorized(ApiKeys::presented(head.headers)
                                     ? "the API key is not valid"
                                     : "an API key is required: send 'Authorization: Bearer <key>' "
                                       "or 'x-api-key: <key>'"),
          dialect);
  }
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
  const Route& route = *find_route(request.head.path());  // screen() made sure it exists
  RequestContext ctx(request, exchange, route);
  ctx.record.id = request_id(request.head.headers, rng);
  ctx.record.bytes_in = request.body.size();
  if (route.kind == RouteKind::proxy && chains.tracing)
    ctx.trace = chains.tracing->start(request.head);
  co_await (route.kind == RouteKind::proxy ? chains.proxy : chains.local).run(ctx);
}

awaitable<Verdict> Gateway::Impl::AnswerLocally::run(RequestContext& ctx) {
  if (ctx.route.kind == RouteKind::events) {
    ctx.record.status = 200;
    co_await stream_events(
        ctx.exchange, g_.feed,
        [this](bool first) {
          return console_json(g_.snapshot(), g_.chains.catalog, g_.feed, g_.dispatch.profiles(),
                              g_.dispatch.models(), g_.config, keys_json(g_.keys_view()), first);
        },
        [this] { return g_.draining; });
    co_return Verdict::answered;
  }
  if (ctx.route.kind == RouteKind::sse && g_.dispatch.models()) {
    ctx.record.status = 200;
    co_await g_.dispatch.models()->stream_events(ctx.exchange, [this] { return g_.draining; });
    co_return Verdict::answered;
  }
  http::Response reply;
  if (ctx.route.kind == RouteKind::admin) {
    AdminView view = g_.admin_view();
    // Not a conditional expression: GCC 12 destroys a co_await's result
    // inside ?: a second time at the coroutine's end.
    if (ctx.route.path == admin_login_path)
      reply = g_.admin.login();
    else
      reply = co_await admin_response(view, ctx.request);
  } else {
    reply = g_.local_response(ctx.route, ctx.request.head);
  }
  reply.headers.add("X-Request-Id", ctx.record.id);
  ctx.record.status = reply.status;
  ctx.record.bytes_out = reply.body.size();
  if (!co_await ctx.exchange.respond(std::move(reply))) ctx.record.client_gone = true;
  co_return Verdict::answered;
}

http::Response Gateway::Impl::local_response(const Route& route,
                                             const http::RequestHead& head) const {
  switch (route.kind) {
    case RouteKind::models:
      return models_response(chains.catalog, fleet.instances(), model_states());
    case RouteKind::model:
      return model_response(head.path().substr(route.path.size()), chains.catalog,
                            fleet.instances(), model_states());
    case RouteKind::sse:
      return openai::error_response(ApiError::not_found(
          "no load: on-demand instances are configured (docs/models.md)", "no_models"));
    case RouteKind::health:
      return health_response(snapshot(), sees_detail(head));
    case RouteKind::metrics: {
      // Per-key series name the keys: only to a scrape that presents one.
      std::string text = metrics.render(snapshot(), keys().allows(head.headers)) +
                         engine_metrics_text(watch.scraper());
      if (chains.tracing) text += chains.tracing->metrics_text();
      http::Response reply = http::json_response(200, std::move(text));
      reply.headers.set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
      return reply;
    }
    case RouteKind::ui: {
      http::Response reply = ui_response(head.path());
      add_page_headers(reply.headers);
      return reply;
    }
    case RouteKind::root:
      return root_response(head.method == "HEAD");
    case RouteKind::proxy:
    case RouteKind::events:
    case RouteKind::admin:
      break;
  }
  return openai::error_response(ApiError::internal("no local handler for this route"));
}

}  // namespace switchyard::gateway
