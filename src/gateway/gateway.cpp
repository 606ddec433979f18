#include "gateway/gateway.h"

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <set>

#include <fmt/compile.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "common/json_text.h"
#include "gateway/api_keys.h"
#include "gateway/forwarder.h"
#include "gateway/model_catalog.h"
#include "gateway/request_record.h"
#include "gateway/router.h"
#include "gateway/wait_queue.h"
#include "openai/api_error.h"
#include "openai/request_inspector.h"

namespace switchyard::gateway {

namespace net = boost::asio;
using net::awaitable;
using openai::ApiError;

namespace {

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
        router(c.policy),
        queue(executor, router, c.queue),
        forwarder(config, fleet, queue, router, metrics),
        rng(std::random_device{}()) {
    for (const auto& inst : fleet.instances()) add_instance(*inst);
    // A freed slot goes to the oldest waiter of its model; a removed
    // instance is stopped once its last request is done.
    router.on_release([this](std::size_t index, const std::string& model) {
      queue.dispatch(model);
      if (router.in_flight(index) == 0 && retiring.erase(index)) stop_instance(index);
    });
    fleet.on_change([this](const fleet::Instance& inst) {
      const bool ready = inst.state == fleet::InstanceState::ready;
      router.set_slots(inst.index, inst.slots);
      router.set_ready(inst.index, ready);
      metrics.set_instance_up(inst.name(), inst.model(), ready);
      metrics.set_instance_slots(inst.name(), inst.slots);
      if (ready) queue.dispatch(inst.model());
    });
  }

  ~Impl() {
    // Leases may be released after this (frames destroyed at shutdown): the
    // queue they would wake is gone.
    router.on_release(nullptr);
    fleet.on_change(nullptr);
  }
  void add_instance(const fleet::Instance& inst) {
    router.add_instance(inst.index, inst.model(), inst.slots);
    metrics.set_instance_up(inst.name(), inst.model(), false);
    metrics.set_instance_slots(inst.name(), inst.slots);
    metrics.set_in_flight(inst.name(), 0);
  }
  void stop_instance(std::size_t index) {
    net::co_spawn(executor, fleet.stop_instance(index), net::detached);
  }
  awaitable<void> handle(http::Request request, http::Exchange& exchange);
  awaitable<void> proxy(http::Request& request, openai::Endpoint endpoint, http::Exchange& exchange,
                        RequestRecord& record);
  // Answers `error` and records its status.
  awaitable<void> fail(http::Exchange& exchange, RequestRecord& record, const ApiError& error);
  http::Response models_response() const;
  http::Response health_response() const;
  void finish(const http::Request& request, const RequestRecord& record);

  net::any_io_executor executor;
  fleet::FleetConfig config;  // replaced field by field on reload()
  fleet::Fleet& fleet;
  obs::GatewayMetrics& metrics;
  ApiKeys keys;
  ModelCatalog catalog;
  Router router;
  WaitQueue queue;
  Forwarder forwarder;
  openai::RequestInspector inspector;
  std::mt19937_64 rng;
  bool draining = false;
  std::set<std::size_t> retiring;  // removed by a reload, still finishing requests
};

Gateway::Gateway(net::any_io_executor executor, const fleet::FleetConfig& config,
                 fleet::Fleet& fleet, obs::GatewayMetrics& metrics)
    : impl_(std::make_unique<Impl>(config, fleet, metrics, executor)) {}
Gateway::~Gateway() = default;

std::string Gateway::reload(const fleet::FleetConfig& next) {
  auto& g = *impl_;
  std::vector<std::string> not_applied;
  if (next.listen != g.config.listen) not_applied.push_back("listen");
  if (next.body_limit != g.config.body_limit) not_applied.push_back("body_limit");
  if (next.policy != g.config.policy) not_applied.push_back("routing");
  if (next.queue.max_length != g.config.queue.max_length ||
      next.queue.max_wait != g.config.queue.max_wait)
    not_applied.push_back("queue");
  const auto changes = g.fleet.apply(next);
  for (auto i : changes.added) g.add_instance(*g.fleet.instances()[i]);
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
  g.config.instances = next.instances;
  std::string summary =
      fmt::format("{} instance(s) added, {} removed; {} model(s)", changes.added.size(),
                  changes.removed.size(), next.models.size());
  if (!not_applied.empty())
    summary += fmt::format("; not applied until restart: {}", fmt::join(not_applied, ", "));
  return summary;
}

void Gateway::begin_drain() {
  impl_->draining = true;
}
void Gateway::stop_waiting() {
  impl_->queue.release_all();
}

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
  RequestRecord record;
  record.id = request_id(request.head.headers, rng);
  record.bytes_in = request.body.size();
  const Route* route = find_route(request.head.path());  // screen() made sure it exists
  if (draining && route->endpoint) {
    // Requests already in flight or queued finish; new ones go elsewhere.
    const ApiError error = ApiError::unavailable("the gateway is shutting down", "shutting_down");
    co_await fail(exchange, record, error);
  } else if (route->endpoint) {
    co_await proxy(request, *route->endpoint, exchange, record);
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

awaitable<void> Gateway::Impl::fail(http::Exchange& exchange, RequestRecord& record,
                                    const ApiError& error) {
  http::Response reply = openai::error_response(error);
  if (draining) reply.headers.add("Connection", "close");
  reply.headers.add("X-Request-Id", record.id);
  record.status = reply.status;
  record.bytes_out = reply.body.size();
  co_await exchange.respond(std::move(reply));
}

awaitable<void> Gateway::Impl::proxy(http::Request& request, openai::Endpoint endpoint,
                                     http::Exchange& exchange, RequestRecord& record) {
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
  const openai::RequestFacts request_facts = *facts;
  co_await forwarder.forward(request, endpoint, request_facts, *model, exchange, record);
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

void Gateway::Impl::finish(const http::Request& request, const RequestRecord& record) {
  const double total = record.seconds_since_start();
  const int status = record.client_gone && record.status == 0 ? 499 : record.status;
  metrics.request_finished(record.model, record.instance, status, record.ttfb, total);
  if (record.usage)
    metrics.add_tokens(record.model, record.usage->prompt_tokens, record.usage->completion_tokens);
  // Formatted at compile time, and milliseconds as whole tenths (integers
  // format at a fraction of a float's cost): one line per request is on the
  // hot path.
  const auto tenths = [](double seconds) { return std::llround(std::max(seconds, 0.0) * 1e4); };
  const long long ttfb = tenths(record.ttfb), ms = tenths(total);
  fmt::memory_buffer line;
  fmt::format_to(
      std::back_inserter(line),
      FMT_COMPILE("access id={} {} {} model={} instance={} status={} in={}B out={}B "
                  "ttfb_ms={}.{} ms={}.{}{}"),
      record.id, request.head.method, request.head.target,
      record.model.empty() ? std::string_view("-") : std::string_view(record.model),
      record.instance.empty() ? std::string_view("-") : std::string_view(record.instance), status,
      record.bytes_in, record.bytes_out, ttfb / 10, ttfb % 10, ms / 10, ms % 10,
      record.client_gone ? " client_gone" : "");
  spdlog::info(std::string_view(line.data(), line.size()));
}

}  // namespace switchyard::gateway
