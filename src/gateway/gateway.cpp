#include "gateway/gateway.h"

#include <boost/asio.hpp>

#include <random>
#include <set>

#include <fmt/compile.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gateway/accounting.h"
#include "gateway/admin_access.h"
#include "gateway/admin_routes.h"
#include "gateway/admission.h"
#include "gateway/api_keys.h"
#include "gateway/console_feed.h"
#include "gateway/console_routes.h"
#include "gateway/console_status.h"
#include "gateway/feed_stage.h"
#include "gateway/forwarder.h"
#include "gateway/info_routes.h"
#include "gateway/key_service.h"
#include "gateway/keys_routes.h"
#include "gateway/ledger_stage.h"
#include "gateway/log_target.h"
#include "gateway/model_catalog.h"
#include "gateway/model_control.h"
#include "gateway/pipeline.h"
#include "gateway/profile_control.h"
#include "gateway/request_tracing.h"
#include "gateway/resolve.h"
#include "gateway/route_stage.h"
#include "gateway/router.h"
#include "gateway/routes.h"
#include "gateway/routing/engine_kv.h"
#include "gateway/status.h"
#include "gateway/stored_responses.h"
#include "gateway/usage_today.h"
#include "gateway/wait_queue.h"
#include "openai/api_error.h"
#include "tenancy/usage_ledger.h"

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
      : executor(executor),
        config(c),
        fleet(f),
        metrics(m),
        key_service(executor, c, std::move(stored), m),
        keys(key_service.table()),
        catalog(c.models),
        forward_options{c.attempts, c.retry_budget},
        router(fleet.instances(), make_routing_policy(c.routing)),
        queue(executor, router, c.queue),
        tracing(c.tracing ? std::make_unique<RequestTracing>(*c.tracing) : nullptr),
        authenticate(keys),
        resolve(catalog),
        stored_responses(fleet.instances()),
        admit(executor, draining, keys, config.queue),
        route(router, queue, config.queue, metrics, config.routing, config.swapping.progress),
        forwarder(Upstreams{fleet.instances(),
                            [this](std::size_t i, const std::string& why) {
                              fleet.report_failure(i, why);
                            },
                            [this](std::size_t i) { fleet.report_success(i); }},
                  route, forward_options, metrics),
        accounting(metrics, c.log.format == config::LogOptions::Format::json, tracing.get()),
        answer_locally(*this),
        rng(std::random_device{}()),
        scraper(executor, fleet.instances(), c.health.metrics_interval),
        feed(executor,
             [this] {
               const auto s = snapshot();
               ConsoleFeed::Gauges g;
               for (const auto& i : s.instances) g.tokens_per_second += i.tokens_per_second;
               for (const auto& m : s.models) g.queued += m.queued;
               return g;
             }),
        list_request(feed),
        ledger(c.state_db),
        usage_today(UsageToday::from_ledger(c.state_db, std::chrono::system_clock::now())),
        record_usage(ledger, usage_today),
        proxy_chain({&accounting, &list_request, &record_usage, &authenticate, &resolve,
                     &stored_responses, &admit, &route, &forwarder}),
        local_chain({&accounting, &answer_locally}) {
    const auto started = tenancy::Clock::now();
    admit.start_budgets(usage_today.tokens(started), started);
    if (const auto& shared = key_service.shared_limits())
      admit.share_limits(shared, c.redis_down == config::FleetConfig::RedisDown::local);
    // A new key table: limits apply at once; requests of a key that is gone
    // or revoked are refused, queued ones included.
    key_service.start({.changed =
                           [this](const std::vector<std::string>& gone) {
                             admit.keys_changed();
                             for (const auto& name : gone) queue.refuse_key(name);
                           },
                       .released = [this](const std::string& key) { admit.wake(key); }});
    if (!c.profiles.empty()) {
      profiles = std::make_unique<ProfileControl>(executor, c, fleet, router, queue, metrics);
      route.add_gate(profiles.get());
    }
    if (ModelControl::wanted(c)) {
      models = std::make_unique<ModelControl>(executor, c, fleet, router, queue, metrics);
      route.add_gate(models.get());
    }
    // A freed slot goes to the next waiter of its model; a removed instance
    // is stopped once its last request is done.
    router.on_release([this](std::size_t index, const std::string& model) {
      queue.dispatch(model, index);
      if (profiles) profiles->slot_released(index);
      if (models) models->slot_released(index);
      if (router.in_flight(index) == 0 && retiring.erase(index)) stop_instance(index);
    });
    // An instance that turns ready may serve waiting requests; one that is
    // ejected hands back the requests it has not started answering.
    fleet.on_change([this](const fleet::Instance& inst) {
      if (inst.routable()) queue.dispatch(inst.model());
      if (inst.state == fleet::InstanceState::ejected) forwarder.abandon_unanswered(inst.index);
      feed.changed();  // the dashboard shows it now
    });
    // The advisor checks each engine's scrapes as they come.
    scraper.on_scrape([this](const fleet::Instance& inst, const obs::EngineMetrics& m) {
      advisor.observe(inst.name(), m.text, m.at);
      if (const auto kv = vllm_kv_pool_tokens(m.text)) router.set_kv_tokens(inst.index, *kv);
    });
    scraper.on_forget([this](const std::string& name) { advisor.forget(name); });
    scraper.start();
  }

  ~Impl() {
    // Leases may be released after this (frames destroyed at shutdown): the
    // queue they would wake is gone.
    router.on_release(nullptr);
    fleet.on_change(nullptr);
    scraper.stop();
    key_service.stop();
  }
  void stop_instance(std::size_t index) {
    net::co_spawn(executor, fleet.stop_instance(index), net::detached);
  }
  obs::StatusSnapshot snapshot() const {
    auto s = take_snapshot(fleet.instances(), router, queue, catalog, draining);
    add_console_status(s, metrics.generation(), advisor);
    if (profiles) s.profiles = profiles->status();
    s.redis = key_service.redis_status();
    return s;
  }
  AdminView admin_view() {
    return AdminView{fleet,
                     profiles.get(),
                     models.get(),
                     draining,
                     [this] { return snapshot(); },
                     [this] { return keys_body(keys_view()); }};
  }
  KeysView keys_view() { return KeysView{keys, key_service.records(), admit, usage_today}; }
  std::vector<profiles::ModelState> model_states() const {
    return models ? models->residency().models() : std::vector<profiles::ModelState>{};
  }
  // Why a request may not use the dashboard or an admin route (where it
  // comes from, whom it is for, who sent it), or nullopt.
  std::optional<ApiError> admin_screen(const http::RequestHead& head, const Route& route) const {
    if (auto refused = host_refusal(head, config.listen, config.admin_hosts)) return refused;
    // The page holds no data: with an admin key anyone may load it (it asks
    // for the key).
    if (route.kind == RouteKind::ui && !config.admin_key.empty()) return std::nullopt;
    if (auto refused =
            admin_refusal(head, config.admin_key, &admin_tickets, AdminTickets::Clock::now()))
      return refused;
    return cross_origin_refusal(head);
  }
  // POST /admin/login (the admin key checked by admin_screen): a ticket in
  // an HttpOnly cookie, which the dashboard's requests then carry.
  http::Response login_response() {
    http::Response reply = http::json_response(200, R"({"ok":true})");
    if (!config.admin_key.empty())
      for (const auto& cookie :
           admin_tickets.set_cookies(admin_tickets.issue(AdminTickets::Clock::now())))
        reply.headers.add("Set-Cookie", cookie);
    return reply;
  }
  // Whether the request may see instance detail (names, URLs) in /health.
  bool sees_detail(const http::RequestHead& head) const {
    return !keys.enabled() || config.health_detail_public || keys.allows(head.headers);
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

  net::any_io_executor executor;
  config::FleetConfig config;  // replaced field by field on reload()
  fleet::Fleet& fleet;
  obs::GatewayMetrics& metrics;
  KeyService key_service;  // YAML, SQLite and Redis keys assembled; Redis's limits
  const ApiKeys& keys;     // its table in force
  ModelCatalog catalog;
  ForwardOptions forward_options;
  bool draining = false;
  AdminTickets admin_tickets;  // the dashboard's logins
  Router router;
  WaitQueue queue;
  std::unique_ptr<RequestTracing> tracing;  // null without tracing:
  // The stages (the chains below say in which order they run).
  Authenticate authenticate;
  Resolve resolve;
  StoredResponses stored_responses;
  Admit admit;
  RouteStage route;
  Forwarder forwarder;
  Accounting accounting;
  AnswerLocally answer_locally;
  std::mt19937_64 rng;
  std::set<std::size_t> retiring;            // removed by a reload, still finishing requests
  std::unique_ptr<ProfileControl> profiles;  // null without profiles
  std::unique_ptr<ModelControl> models;      // null without on-demand instances
  obs::MetricsScraper scraper;               // each ready engine's /metrics
  advisor::LiveAdvisor advisor;              // doctor's backend checks on those scrapes
  ConsoleFeed feed;                          // the dashboard's requests and charts
  ListRequest list_request;
  tenancy::UsageLedger ledger;
  UsageToday usage_today;  // each key's ledger totals since UTC midnight
  RecordUsage record_usage;
  Pipeline proxy_chain;  // the API's routes, forwarded to an engine
  Pipeline local_chain;  // the routes answered here
};

Gateway::Gateway(net::any_io_executor executor, const config::FleetConfig& config,
                 tenancy::StoredKeys stored_keys, fleet::Fleet& fleet, obs::GatewayMetrics& metrics)
    : impl_(std::make_unique<Impl>(config, fleet, metrics, executor, std::move(stored_keys))) {}
Gateway::~Gateway() = default;

std::string Gateway::reload(const config::FleetConfig& next) {
  auto& g = *impl_;
  const auto changes = g.fleet.apply(next);
  for (auto i : changes.removed) {
    if (g.router.in_flight(i) == 0)
      g.stop_instance(i);
    else
      g.retiring.insert(i);
  }
  g.catalog = ModelCatalog(next.models);
  g.config.models = next.models;
  g.config.api_keys = next.api_keys;
  g.config.static_keys = next.static_keys;
  g.key_service.set_statics(next.static_keys);
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
  impl_->admit.release_all();
  impl_->queue.release_all();
}
void Gateway::end_running(std::chrono::milliseconds drain) {
  impl_->forwarder.end_running(drain);
}

std::optional<http::Response> Gateway::screen(const http::RequestHead& head) {
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
    if (auto refused = impl_->admin_screen(head, *route))
      refusal = openai::error_response(*refused);
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
    impl_->accounting.refused(head, *refusal->headers.find("x-request-id"), refusal->status);
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
  if (route.kind == RouteKind::proxy && tracing) ctx.trace = tracing->start(request.head);
  co_await (route.kind == RouteKind::proxy ? proxy_chain : local_chain).run(ctx);
}

awaitable<Verdict> Gateway::Impl::AnswerLocally::run(RequestContext& ctx) {
  if (ctx.route.kind == RouteKind::events) {
    ctx.record.status = 200;
    co_await stream_events(
        ctx.exchange, g_.feed,
        [this](bool first) {
          return console_json(g_.snapshot(), g_.catalog, g_.feed, g_.profiles.get(),
                              g_.models.get(), g_.config, keys_json(g_.keys_view()), first);
        },
        [this] { return g_.draining; });
    co_return Verdict::answered;
  }
  if (ctx.route.kind == RouteKind::sse && g_.models) {
    ctx.record.status = 200;
    co_await g_.models->stream_events(ctx.exchange, [this] { return g_.draining; });
    co_return Verdict::answered;
  }
  http::Response reply;
  if (ctx.route.kind == RouteKind::admin) {
    AdminView view = g_.admin_view();
    // Not a conditional expression: GCC 12 destroys a co_await's result
    // inside ?: a second time at the coroutine's end.
    if (ctx.route.path == admin_login_path)
      reply = g_.login_response();
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
      return models_response(catalog, fleet.instances(), model_states());
    case RouteKind::model:
      return model_response(head.path().substr(route.path.size()), catalog, fleet.instances(),
                            model_states());
    case RouteKind::sse:
      return openai::error_response(ApiError::not_found(
          "no load: on-demand instances are configured (docs/models.md)", "no_models"));
    case RouteKind::health:
      return health_response(snapshot(), sees_detail(head));
    case RouteKind::metrics: {
      // Per-key series name the keys: only to a scrape that presents one.
      std::string text =
          metrics.render(snapshot(), keys.allows(head.headers)) + engine_metrics_text(scraper);
      if (tracing) text += tracing->metrics_text();
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
