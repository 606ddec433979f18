#include "gateway/local_routes.h"

#include "gateway/admin_access.h"
#include "gateway/admin_routes.h"
#include "gateway/console_routes.h"
#include "gateway/console_status.h"
#include "gateway/info_routes.h"
#include "gateway/status.h"

namespace switchyard::gateway {

using boost::asio::awaitable;

awaitable<Verdict> LocalRoutes::run(RequestContext& ctx) {
  co_await (this->*ctx.route.answer)(ctx);
  co_return Verdict::answered;
}

// The handlers build their answer into a named local before they await it:
// GCC 12 mishandles temporaries inside a co_await expression
// (docs/architecture.md, "Build").
awaitable<void> LocalRoutes::respond(RequestContext& ctx, http::Response reply) {
  reply.headers.add("X-Request-Id", ctx.record.id);
  ctx.record.status = reply.status;
  ctx.record.bytes_out = reply.body.size();
  // Two statements: GCC 12 builds a co_await in an if's condition, last in
  // a coroutine, into a trap.
  const bool sent = co_await ctx.exchange.respond(std::move(reply));
  ctx.record.client_gone = !sent;
}

awaitable<void> LocalRoutes::models(RequestContext& ctx) {
  http::Response reply = models_response(p_.chains.catalog, p_.fleet.instances(), model_states());
  co_await respond(ctx, std::move(reply));
}

awaitable<void> LocalRoutes::model(RequestContext& ctx) {
  const auto id = ctx.request.head.path().substr(ctx.route.path.size());
  http::Response reply =
      model_response(id, p_.chains.catalog, p_.fleet.instances(), model_states());
  co_await respond(ctx, std::move(reply));
}

awaitable<void> LocalRoutes::model_events(RequestContext& ctx) {
  if (!p_.dispatch.models()) {
    http::Response reply = openai::error_response(openai::ApiError::not_found(
        "no load: on-demand instances are configured (docs/models.md)", "no_models"));
    co_await respond(ctx, std::move(reply));
    co_return;
  }
  ctx.record.status = 200;
  co_await p_.dispatch.models()->stream_events(ctx.exchange, [this] { return p_.draining; });
}

awaitable<void> LocalRoutes::router_props(RequestContext& ctx) {
  http::Response reply = router_props_response(p_.config.instances.size());
  co_await respond(ctx, std::move(reply));
}

awaitable<void> LocalRoutes::health(RequestContext& ctx) {
  http::Response reply = health_response(snapshot(), sees_detail(ctx.request.head));
  co_await respond(ctx, std::move(reply));
}

awaitable<void> LocalRoutes::metrics(RequestContext& ctx) {
  // Per-key series name the keys: only to a scrape that presents one.
  std::string text =
      p_.metrics.render(snapshot(), p_.keys.table().allows(ctx.request.head.headers)) +
      engine_metrics_text(p_.watch.scraper());
  if (p_.chains.tracing) text += p_.chains.tracing->metrics_text();
  http::Response reply = http::json_response(200, std::move(text));
  reply.headers.set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
  co_await respond(ctx, std::move(reply));
}

awaitable<void> LocalRoutes::root(RequestContext& ctx) {
  http::Response reply = root_response(ctx.request.head.method == "HEAD");
  co_await respond(ctx, std::move(reply));
}

awaitable<void> LocalRoutes::page(RequestContext& ctx) {
  http::Response reply = ui_response(ctx.request.head.path());
  add_page_headers(reply.headers);
  co_await respond(ctx, std::move(reply));
}

awaitable<void> LocalRoutes::console_events(RequestContext& ctx) {
  ctx.record.status = 200;
  co_await stream_events(
      ctx.exchange, p_.feed,
      [this](bool first) {
        return console_json(snapshot(), p_.chains.catalog, p_.feed, p_.dispatch.profiles(),
                            p_.dispatch.models(), p_.config, keys_json(keys_view()), first);
      },
      [this] { return p_.draining; });
}

awaitable<void> LocalRoutes::admin(RequestContext& ctx) {
  AdminView view{
      p_.fleet,    p_.dispatch.profiles(),        p_.dispatch.models(),
      p_.draining, [this] { return snapshot(); }, [this] { return keys_body(keys_view()); }};
  http::Response reply = co_await admin_response(view, ctx.request);
  co_await respond(ctx, std::move(reply));
}

awaitable<void> LocalRoutes::login(RequestContext& ctx) {
  http::Response reply = p_.admin.login();
  co_await respond(ctx, std::move(reply));
}

obs::StatusSnapshot LocalRoutes::snapshot() const {
  auto s = take_snapshot(p_.fleet.instances(), p_.dispatch.router(), p_.dispatch.queue(),
                         p_.chains.catalog, p_.draining);
  add_console_status(s, p_.metrics.generation(), p_.watch.advisor());
  if (p_.dispatch.profiles()) s.profiles = p_.dispatch.profiles()->status();
  s.redis = p_.keys.redis_status();
  return s;
}

bool LocalRoutes::sees_detail(const http::RequestHead& head) const {
  const ApiKeys& keys = p_.keys.table();
  return !keys.enabled() || p_.config.health_detail_public || keys.allows(head.headers);
}

std::vector<profiles::ModelState> LocalRoutes::model_states() const {
  return p_.dispatch.models() ? p_.dispatch.models()->residency().models()
                              : std::vector<profiles::ModelState>{};
}

KeysView LocalRoutes::keys_view() {
  return KeysView{p_.keys.table(), p_.keys.records(), p_.chains.admit,
                  p_.chains.record_usage.today()};
}

}  // namespace switchyard::gateway
