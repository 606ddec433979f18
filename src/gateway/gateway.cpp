#include "gateway/gateway.h"

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <atomic>
#include <chrono>
#include <random>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/json_text.h"
#include "gateway/api_keys.h"
#include "gateway/model_catalog.h"
#include "gateway/router.h"
#include "http/sse.h"
#include "http/upstream.h"
#include "openai/api_error.h"
#include "openai/request_inspector.h"
#include "openai/usage.h"

namespace switchyard::gateway {

namespace net = boost::asio;
using net::awaitable;
using namespace net::experimental::awaitable_operators;
using clock_type = std::chrono::steady_clock;
using openai::ApiError;

namespace {

// A non-streamed upstream body larger than this is refused (a 502) rather
// than buffered: generous for embeddings of large batches.
constexpr std::size_t kMaxBufferedResponse = std::size_t(256) << 20;

struct Route {
  std::string_view path;
  std::string_view method;
  std::optional<openai::Endpoint> endpoint;  // set for forwarded routes
  bool needs_key;
};

constexpr Route kRoutes[] = {
    {"/v1/chat/completions", "POST", openai::Endpoint::chat_completions, true},
    {"/v1/completions", "POST", openai::Endpoint::completions, true},
    {"/v1/embeddings", "POST", openai::Endpoint::embeddings, true},
    {"/tokenize", "POST", openai::Endpoint::tokenize, true},
    {"/detokenize", "POST", openai::Endpoint::detokenize, true},
    {"/v1/models", "GET", std::nullopt, true},
    {"/health", "GET", std::nullopt, false},
    {"/metrics", "GET", std::nullopt, false},
};

const Route* find_route(std::string_view path) {
  for (const auto& r : kRoutes)
    if (r.path == path) return &r;
  return nullptr;
}

// What the access log and metrics record of one request.
struct Exchange {
  std::string id;
  clock_type::time_point start = clock_type::now();
  std::string model;
  std::string instance;
  std::size_t bytes_in = 0;
  int status = 0;
  double ttfb = -1;  // seconds
  std::size_t bytes_out = 0;
  bool client_gone = false;
  std::optional<openai::Usage> usage;
};

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

// A client's X-Request-Id when it is a sane token, else a fresh one.
std::string request_id(const http::Headers& headers, std::mt19937_64& rng) {
  if (auto given = headers.find("x-request-id"); given && !given->empty() && given->size() <= 64) {
    bool sane = true;
    for (unsigned char c : *given) sane &= std::isalnum(c) || c == '-' || c == '_' || c == '.';
    if (sane) return std::string(*given);
  }
  return fmt::format("{:016x}", rng());
}

}  // namespace

struct Gateway::Impl {
  Impl(const fleet::FleetConfig& c, fleet::Fleet& f, obs::GatewayMetrics& m)
      : config(c),
        fleet(f),
        metrics(m),
        keys(c.api_keys),
        catalog(c.models),
        router(c.policy),
        rng(std::random_device{}()) {
    for (const auto& inst : fleet.instances()) {
      router.add_instance(inst->index, inst->model(), inst->slots);
      metrics.set_instance_up(inst->name(), inst->model(), false);
      metrics.set_instance_slots(inst->name(), inst->slots);
      metrics.set_in_flight(inst->name(), 0);
    }
    fleet.on_change([this](const fleet::Instance& inst) {
      router.set_slots(inst.index, inst.slots);
      router.set_ready(inst.index, inst.state == fleet::InstanceState::ready);
      metrics.set_instance_up(inst.name(), inst.model(), inst.state == fleet::InstanceState::ready);
      metrics.set_instance_slots(inst.name(), inst.slots);
    });
  }

  awaitable<void> handle(http::Request request, http::Exchange& exchange);
  awaitable<void> forward(http::Request& request, openai::Endpoint endpoint,
                          http::Exchange& exchange, Exchange& record);
  awaitable<void> relay(fleet::Instance& inst, http::UpstreamCall& call,
                        const http::UpstreamRequest& upstream, http::Exchange& exchange,
                        Exchange& record);
  awaitable<bool> watch_client(http::Exchange& exchange, http::UpstreamCall& call,
                               Exchange& record);
  // Answers `error` and records its status.
  awaitable<void> fail(http::Exchange& exchange, Exchange& record, const ApiError& error);
  http::Response models_response() const;
  http::Response health_response() const;
  void finish(const http::Request& request, const Exchange& record);

  const fleet::FleetConfig config;
  fleet::Fleet& fleet;
  obs::GatewayMetrics& metrics;
  const ApiKeys keys;
  const ModelCatalog catalog;
  Router router;
  openai::RequestInspector inspector;
  std::mt19937_64 rng;
};

Gateway::Gateway(const fleet::FleetConfig& config, fleet::Fleet& fleet,
                 obs::GatewayMetrics& metrics)
    : impl_(std::make_unique<Impl>(config, fleet, metrics)) {}
Gateway::~Gateway() = default;

std::optional<http::Response> Gateway::screen(const http::RequestHead& head) {
  const Route* route = find_route(head.path());
  std::optional<http::Response> refusal;
  if (!route) {
    refusal = openai::error_response(ApiError::not_found(
        fmt::format("no route for {} {}", head.method, head.path()), "unknown_url"));
  } else if (head.method != route->method) {
    refusal = openai::error_response(ApiError::method_not_allowed(
        fmt::format("{} takes {}, not {}", route->path, route->method, head.method)));
    refusal->headers.add("Allow", std::string(route->method));
  } else if (route->needs_key && !impl_->keys.allows(head.headers.find("authorization"))) {
    refusal = openai::error_response(
        ApiError::unauthorized(head.headers.find("authorization")
                                   ? "the API key is not valid"
                                   : "an API key is required: send 'Authorization: Bearer <key>'"));
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
  Exchange record;
  record.id = request_id(request.head.headers, rng);
  record.bytes_in = request.body.size();
  const Route* route = find_route(request.head.path());  // screen() made sure it exists
  if (route->endpoint) {
    co_await forward(request, *route->endpoint, exchange, record);
  } else {
    http::Response reply;
    if (route->path == "/v1/models") reply = models_response();
    if (route->path == "/health") reply = health_response();
    if (route->path == "/metrics") {
      reply = http::json_response(200, metrics.render());
      reply.headers.set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    }
    reply.headers.add("X-Request-Id", record.id);
    record.status = reply.status;
    record.bytes_out = reply.body.size();
    co_await exchange.respond(std::move(reply));
  }
  finish(request, record);
}

awaitable<void> Gateway::Impl::fail(http::Exchange& exchange, Exchange& record,
                                    const ApiError& error) {
  http::Response reply = openai::error_response(error);
  reply.headers.add("X-Request-Id", record.id);
  record.status = reply.status;
  record.bytes_out = reply.body.size();
  co_await exchange.respond(std::move(reply));
}

awaitable<void> Gateway::Impl::forward(http::Request& request, openai::Endpoint endpoint,
                                       http::Exchange& exchange, Exchange& record) {
  auto facts = inspector.inspect(request.body, endpoint);
  if (!facts) {
    const ApiError error = ApiError::bad_request(facts.error().message);
    co_await fail(exchange, record, error);
    co_return;
  }
  if (facts->model.empty()) {
    const ApiError error = ApiError::bad_request(
        fmt::format("'model' is required; served models: {}", catalog.describe()), "model");
    co_await fail(exchange, record, error);
    co_return;
  }
  auto model = catalog.resolve(facts->model);
  if (!model) {
    const ApiError error =
        ApiError::not_found(fmt::format("the model '{}' does not exist; served models: {}",
                                        facts->model, catalog.describe()),
                            "model_not_found");
    co_await fail(exchange, record, error);
    co_return;
  }
  record.model = *model;

  // Tokenizer calls are cheap and run beside generation in the engine: they
  // go to any ready instance without taking a slot.
  const bool takes_slot =
      endpoint != openai::Endpoint::tokenize && endpoint != openai::Endpoint::detokenize;
  RouteLease lease;
  std::optional<std::size_t> index;
  if (takes_slot) {
    Router::Refusal why{};
    if (auto l = router.acquire(*model, &why)) {
      lease = std::move(*l);
      index = lease.instance();
    } else {
      const ApiError error =
          why == Router::Refusal::all_slots_busy
              ? ApiError::unavailable(
                    fmt::format("every instance of '{}' is busy; retry shortly", *model),
                    "all_slots_busy")
              : ApiError::unavailable(fmt::format("no instance of '{}' is ready", *model),
                                      "no_instance_ready");
      co_await fail(exchange, record, error);
      co_return;
    }
  } else {
    index = router.any_ready(*model);
    if (!index) {
      const ApiError error = ApiError::unavailable(
          fmt::format("no instance of '{}' is ready", *model), "no_instance_ready");
      co_await fail(exchange, record, error);
      co_return;
    }
  }
  fleet::Instance& inst = *fleet.instances()[*index];
  record.instance = inst.name();
  metrics.set_in_flight(inst.name(), router.in_flight(inst.index));

  http::UpstreamRequest upstream;
  upstream.method = request.head.method;
  upstream.target = request.head.target;
  upstream.headers.add(
      "Content-Type",
      std::string(request.head.headers.find("content-type").value_or("application/json")));
  if (auto accept = request.head.headers.find("accept"))
    upstream.headers.add("Accept", std::string(*accept));
  upstream.headers.add("X-Request-Id", record.id);
  // The client's Authorization is the gateway's business, never the engine's.
  if (inst.config.api_key) upstream.headers.add("Authorization", "Bearer " + *inst.config.api_key);
  upstream.body = facts->model == inst.served_model() || facts->model_length == 0
                      ? std::move(request.body)
                      : openai::replace_model(request.body, *facts, inst.served_model());

  http::UpstreamCall call(*inst.pool);
  // A client that leaves cancels the upstream call at once, freeing the
  // engine's slot and ours.
  co_await (relay(inst, call, upstream, exchange, record) || watch_client(exchange, call, record));
  lease = RouteLease();
  metrics.set_in_flight(inst.name(), router.in_flight(inst.index));
}

awaitable<bool> Gateway::Impl::watch_client(http::Exchange& exchange, http::UpstreamCall& call,
                                            Exchange& record) {
  const bool gone = co_await exchange.until_client_gone();
  if (gone) {
    record.client_gone = true;
    call.abort();
  }
  co_return gone;
}

awaitable<void> Gateway::Impl::relay(fleet::Instance& inst, http::UpstreamCall& call,
                                     const http::UpstreamRequest& upstream,
                                     http::Exchange& exchange, Exchange& record) {
  // Never throws (see the `||` in forward()): every failure is answered.
  try {
    auto head = co_await call.send(upstream);
    if (!head) {
      if (record.client_gone) co_return;
      const ApiError error = ApiError::bad_gateway(
          fmt::format("instance {} failed: {}", inst.name(), head.error().message));
      co_await fail(exchange, record, error);
      co_return;
    }
    const std::string content_type(head->headers.find("content-type").value_or("application/json"));
    const bool event_stream = content_type.starts_with("text/event-stream");

    if (!event_stream) {
      auto body = co_await call.read_all(kMaxBufferedResponse);
      if (!body) {
        if (record.client_gone) co_return;
        const ApiError error = ApiError::bad_gateway(
            fmt::format("instance {} failed: {}", inst.name(), body.error().message));
        co_await fail(exchange, record, error);
        co_return;
      }
      record.usage = openai::find_usage(*body);
      http::Response reply;
      reply.status = head->status;
      reply.headers.add("Content-Type", content_type);
      reply.headers.add("X-Request-Id", record.id);
      reply.body = std::move(*body);
      record.status = reply.status;
      record.ttfb = seconds_since(record.start);
      record.bytes_out = reply.body.size();
      co_await exchange.respond(std::move(reply));
      co_return;
    }

    http::Headers headers;
    headers.add("Content-Type", content_type);
    headers.add("Cache-Control", "no-cache");
    headers.add("X-Accel-Buffering", "no");
    headers.add("X-Request-Id", record.id);
    record.status = head->status;
    if (!co_await exchange.start_stream(head->status, std::move(headers))) co_return;
    record.ttfb = seconds_since(record.start);

    // Relay whole events as they complete, so the stream can be ended
    // cleanly at an event boundary if the engine fails.
    http::SseSplitter splitter;
    for (;;) {
      auto piece = co_await call.read_some();
      if (!piece) {
        if (record.client_gone) co_return;
        spdlog::warn("request {}: instance {} broke off the stream: {}", record.id, inst.name(),
                     piece.error().message);
        const ApiError error = ApiError::bad_gateway(
            fmt::format("instance {} failed mid-stream: {}", inst.name(), piece.error().message));
        const std::string tail =
            http::sse_event(openai::error_body(error)) + http::sse_event("[DONE]");
        if (co_await exchange.send_chunk(tail)) co_await exchange.end_stream();
        co_return;
      }
      if (piece->empty()) break;
      splitter.feed(*piece);
      while (auto event = splitter.next()) {
        if (auto usage = openai::find_usage(http::sse_data(*event))) record.usage = usage;
        record.bytes_out += event->size();
        if (!co_await exchange.send_chunk(*event)) co_return;
      }
    }
    const std::string rest(splitter.pending());
    if (!rest.empty() && !co_await exchange.send_chunk(rest)) co_return;
    co_await exchange.end_stream();
  } catch (const std::exception& e) {
    spdlog::error("request {}: {}", record.id, e.what());
  }
}

http::Response Gateway::Impl::models_response() const {
  const auto created = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  boost::json::array data;
  for (const auto& m : catalog.models()) {
    bool served = false;
    for (const auto& inst : fleet.instances())
      served |= inst->model() == m.name && inst->state == fleet::InstanceState::ready;
    if (!served) continue;
    boost::json::array aliases;
    for (const auto& a : m.aliases) aliases.emplace_back(a);
    data.push_back(boost::json::object{{"id", m.name},
                                       {"object", "model"},
                                       {"created", created},
                                       {"owned_by", "switchyard"},
                                       {"aliases", aliases}});
    for (const auto& a : m.aliases)
      data.push_back(boost::json::object{{"id", a},
                                         {"object", "model"},
                                         {"created", created},
                                         {"owned_by", "switchyard"},
                                         {"alias_of", m.name}});
  }
  return http::json_response(200,
                             to_json_text(boost::json::object{{"object", "list"}, {"data", data}}));
}

http::Response Gateway::Impl::health_response() const {
  boost::json::array instances;
  bool any_ready = false;
  for (const auto& inst : fleet.instances()) {
    any_ready |= inst->state == fleet::InstanceState::ready;
    instances.push_back(
        boost::json::object{{"name", inst->name()},
                            {"model", inst->model()},
                            {"state", fleet::to_string(inst->state)},
                            {"url", inst->url ? "http://" + inst->url->authority() : ""},
                            {"slots", inst->slots},
                            {"in_flight", router.in_flight(inst->index)}});
  }
  boost::json::object body{{"status", any_ready ? "ok" : "unavailable"},
                           {"instances", std::move(instances)}};
  return http::json_response(any_ready ? 200 : 503, to_json_text(body));
}

void Gateway::Impl::finish(const http::Request& request, const Exchange& record) {
  const double total = seconds_since(record.start);
  const int status = record.client_gone && record.status == 0 ? 499 : record.status;
  metrics.request_finished(record.model, record.instance, status, record.ttfb, total);
  if (record.usage)
    metrics.add_tokens(record.model, record.usage->prompt_tokens, record.usage->completion_tokens);
  spdlog::info(
      "access id={} {} {} model={} instance={} status={} in={}B out={}B ttfb_ms={:.1f} "
      "ms={:.1f}{}",
      record.id, request.head.method, request.head.target,
      record.model.empty() ? "-" : record.model, record.instance.empty() ? "-" : record.instance,
      status, record.bytes_in, record.bytes_out, record.ttfb < 0 ? 0.0 : record.ttfb * 1e3,
      total * 1e3, record.client_gone ? " client_gone" : "");
}

}  // namespace switchyard::gateway
