#include "gateway/model_control.h"

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/json.hpp>

#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/json_text.h"
#include "common/scoped_member.h"
#include "http/message.h"

namespace switchyard::gateway {

namespace net = boost::asio;
using net::awaitable;
using namespace net::experimental::awaitable_operators;
using openai::ApiError;

namespace {

// Whether the request lets its model be loaded for it: llama.cpp's router
// reads ?autoload= "true" and "1" as yes, any other value as no (its web UI
// sends autoload=false with /props?model=).
bool asks_autoload(const RequestContext& ctx) {
  const auto value = http::query_param(ctx.request.head.target, "autoload");
  return !value || value->empty() || *value == "true" || *value == "1";
}

}  // namespace

struct ModelControl::Impl final : profiles::ResidencyEnv {
  Impl(net::any_io_executor ex, const config::FleetConfig& config, fleet::Fleet& f, Router& r,
       WaitQueue& q, obs::GatewayMetrics& m)
      : options(config.swapping),
        fleet(f),
        router(r),
        queue(q),
        metrics(m),
        residency(ex, config, *this, [] { return std::chrono::steady_clock::now(); }) {
    residency.on_event([this](const profiles::ResidencyEvent& e) { happened(e); });
    residency.prestart();
    gauge();
  }

  // The resident gauge of every model it manages, and the memory per card.
  void gauge() {
    for (const auto& s : residency.models())
      if (residency.manages(s.model)) metrics.model_resident(s.model, residency.routable(s.model));
    gauge_memory();
  }

  // ResidencyEnv over the fleet and the slot ledger.
  const std::vector<std::unique_ptr<fleet::Instance>>& instances() const override {
    return fleet.instances();
  }
  int in_flight(std::size_t index) const override { return router.in_flight(index); }
  void set_cause(std::size_t index, fleet::AdminCause cause, bool on) override {
    fleet.set_cause(index, cause, on);
  }
  awaitable<std::optional<std::string>> bring_up(std::size_t index) override {
    return fleet.bring_up(index);
  }
  awaitable<void> bring_down(std::size_t index) override { return fleet.bring_down(index); }

  void happened(const profiles::ResidencyEvent& e) {
    using Kind = profiles::ResidencyEvent::Kind;
    switch (e.kind) {
      case Kind::loading:
        metrics.model_load_started(e.model, e.reason);
        break;
      case Kind::loaded:
        metrics.model_loaded(e.model, e.seconds);
        metrics.model_resident(e.model, true);
        queue.dispatch(e.model);
        break;
      case Kind::unloaded:
        metrics.model_unloaded(e.model, e.reason);
        metrics.model_resident(e.model, residency.routable(e.model));
        break;
      case Kind::failed:
        failures[e.model] = e.reason;
        // Its waiters are answered now, not at max_wait.
        queue.refuse_model(e.model);
        break;
    }
    if (e.kind != Kind::failed) failures.erase(e.model);
    gauge_memory();
    publish(e);
  }

  void gauge_memory() {
    auto used = residency.memory_in_use();
    for (const auto& inst : fleet.instances())
      for (const auto& gpu : inst->config.gpu_ids()) used.try_emplace(gpu, 0);
    for (const auto& [gpu, bytes] : used) metrics.gpu_memory_in_use(gpu, bytes);
  }

  // llama.cpp router mode's event shape: {"data":{"status":...},"event":"status_change","model":M};
  // a load's start is its "model_status" event.
  void publish(const profiles::ResidencyEvent& e) {
    using Kind = profiles::ResidencyEvent::Kind;
    boost::json::object data{
        {"status", e.kind == Kind::failed ? "unloaded" : profiles::to_string(e.kind)}};
    if (e.kind == Kind::failed || e.kind == Kind::unloaded) {
      int code = 0;
      for (const auto& inst : fleet.instances())
        if (inst->name() == e.instance && e.kind == Kind::failed)
          code = inst->exit_code.value_or(1);
      data["exit_code"] = code;
    }
    if (e.kind == Kind::failed) data["error"] = e.reason;
    send_status(e.model, std::move(data),
                e.kind == Kind::loading ? "model_status" : "status_change");
  }

  void send_status(const std::string& model, boost::json::object data,
                   std::string_view event = "status_change") {
    shown[model] = data.at("status").as_string();
    send(to_json_text(
        boost::json::object{{"data", std::move(data)}, {"event", event}, {"model", model}}));
  }

  // One /models/sse event to every listener (and the latest kept).
  void send(std::string line) {
    events.push_back(std::move(line));
    if (events.size() > 64) events.pop_front();
    ++published;
    for (auto* t : listeners) t->cancel();
  }

  config::SwappingOptions options;
  fleet::Fleet& fleet;
  Router& router;
  WaitQueue& queue;
  obs::GatewayMetrics& metrics;
  profiles::ModelResidency residency;
  std::map<std::string, std::string> failures;  // model → why its last load failed
  std::map<std::string, std::string> shown;     // model → the status last sent
  std::deque<std::string> events;               // the latest, for /models/sse
  std::uint64_t published = 0;                  // events ever
  std::set<net::steady_timer*> listeners;
};

ModelControl::ModelControl(net::any_io_executor executor, const config::FleetConfig& config,
                           fleet::Fleet& fleet, Router& router, WaitQueue& queue,
                           obs::GatewayMetrics& metrics)
    : impl_(std::make_unique<Impl>(executor, config, fleet, router, queue, metrics)) {}

ModelControl::~ModelControl() = default;

void ModelControl::reload(const config::FleetConfig& config) {
  impl_->options = config.swapping;
  impl_->residency.reload(config);
  impl_->gauge();
  // As llama.cpp's router says its list changed: its web UI fetches it again.
  impl_->send(R"({"event":"models_reload","model":"*"})");
}

bool ModelControl::wanted(const config::FleetConfig& config) {
  for (const auto& inst : config.instances)
    if (inst.load == config::LoadMode::on_demand) return true;
  return false;
}

profiles::ModelResidency& ModelControl::residency() {
  return impl_->residency;
}

std::optional<std::chrono::milliseconds> ModelControl::hold(const RequestContext& ctx) {
  auto& r = impl_->residency;
  if (!r.manages(ctx.model)) return std::nullopt;
  // Asked not to load it: no wait, and refusal() says why.
  if (!asks_autoload(ctx) && !r.routable(ctx.model)) return std::chrono::milliseconds(0);
  impl_->failures.erase(ctx.model);  // a new request tries the load again
  r.waiting(&ctx, ctx.model);
  if (r.routable(ctx.model)) return std::nullopt;
  return impl_->options.max_wait;
}

void ModelControl::routed(const RequestContext& ctx) {
  impl_->residency.left(&ctx);
  if (ctx.target) impl_->residency.used(*ctx.target);
}

std::optional<ApiError> ModelControl::refusal(const RequestContext& ctx) {
  auto& g = *impl_;
  if (!g.residency.manages(ctx.model)) return std::nullopt;
  if (!asks_autoload(ctx) && !g.residency.routable(ctx.model))
    return ApiError::bad_request(
        fmt::format("model '{}' is not loaded and the request says autoload=false", ctx.model),
        "autoload");
  if (auto it = g.failures.find(ctx.model); it != g.failures.end())
    return ApiError::unavailable(
        fmt::format("model '{}' failed to load: {}", ctx.model, it->second), "model_load_failed");
  ApiError e = ApiError::unavailable(
      fmt::format("model '{}' is being loaded and could not serve this request within "
                  "swapping.max_wait; retry shortly",
                  ctx.model),
      "model_loading");
  e.retry_after =
      std::max(1, static_cast<int>(std::ceil(g.residency.expected_load_seconds(ctx.model))));
  return e;
}

void ModelControl::slot_released(std::size_t index) {
  impl_->residency.used(index);
}

// What the model shows once its engine has spoken: the progress of its load
// (or of its wake), or that it fell asleep or woke.
void ModelControl::engine_state(const fleet::Instance& inst, const EngineState& state) {
  auto& g = *impl_;
  const auto now = g.residency.model(inst.model()).value;
  if (now == "loading" && state.state == "loading" && !state.payload.empty())
    return g.send_status(inst.model(), {{"status", "loading"}, {"progress", state.payload}});
  const auto it = g.shown.find(inst.model());
  if ((now == "sleeping" || now == "loaded") && (it == g.shown.end() || it->second != now))
    g.send_status(inst.model(), {{"status", now}});
}

awaitable<void> ModelControl::stream_events(http::Exchange& exchange,
                                            std::function<bool()> ending) {
  http::Headers headers;
  headers.add("Content-Type", "text/event-stream");
  headers.add("Cache-Control", "no-cache");
  headers.add("X-Accel-Buffering", "no");
  auto& g = *impl_;
  // Like llama.cpp's router: nothing on connect, each event from now on.
  std::uint64_t sent = g.published;
  if (!co_await exchange.start_stream(200, std::move(headers))) co_return;
  net::steady_timer wake(co_await net::this_coro::executor);
  const ScopedMember listening(g.listeners, &wake);
  using clock = std::chrono::steady_clock;
  auto written = clock::now();
  while (!ending()) {
    while (sent < g.published) {
      // A client too far behind gets the oldest kept.
      sent = std::max<std::uint64_t>(sent, g.published - g.events.size());
      std::string line = "data: " + g.events[g.events.size() - (g.published - sent)] + "\n\n";
      ++sent;
      if (!co_await exchange.send_chunk(std::move(line))) co_return;
      written = clock::now();
    }
    // A quiet quarter minute: a comment keeps proxies from closing it.
    if (clock::now() - written >= std::chrono::seconds(15)) {
      if (!co_await exchange.send_chunk(": keep-alive\n\n")) co_return;
      written = clock::now();
    }
    // Woken by an event; the tick notices a shutdown's drain.
    wake.expires_after(std::chrono::seconds(1));
    auto woke = co_await (wake.async_wait(net::as_tuple(net::use_awaitable)) ||
                          exchange.until_client_gone());
    if (woke.index() == 1) co_return;
  }
  co_await exchange.end_stream();
}

}  // namespace switchyard::gateway
