#include "gateway/console_routes.h"

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/json.hpp>

#include <chrono>

#include "common/json_text.h"
#include "gateway/admin_routes.h"
#include "gateway/info_routes.h"
#include "gateway/ui/ui_assets.h"
#include "openai/api_error.h"

namespace switchyard::gateway {

namespace net = boost::asio;
using namespace net::experimental::awaitable_operators;
namespace json = boost::json;

http::Response ui_response(std::string_view path) {
  const std::string_view name =
      path == "/ui" ? "index.html" : path.substr(std::string_view("/ui/").size());
  const UiAsset* asset = find_ui_asset(name);
  if (!asset)
    return openai::error_response(
        openai::ApiError::not_found("no dashboard file " + std::string(path), "unknown_url"));
  http::Response r;
  r.status = 200;
  r.headers.add("Content-Type", std::string(asset->content_type));
  // The page is built into the binary: an upgrade is a new binary anyway.
  r.headers.add("Cache-Control", "no-cache");
  r.body = std::string(asset->body);
  return r;
}

namespace {

json::object point_json(const ChartPoint& p) {
  return {{"t", p.t},
          {"tokens_per_second", p.tokens_per_second},
          {"queued", p.queued},
          {"ttft_p50", p.ttft_p50},
          {"ttft_p99", p.ttft_p99},
          {"ok", p.ok},
          {"error", p.error},
          {"upstream_failed", p.upstream_failed},
          {"client_closed", p.client_closed}};
}

json::object residency_json(ModelControl& models, const config::FleetConfig& config) {
  auto& residency = models.residency();
  json::array list;
  for (const auto& state : residency.models()) {
    json::array instances;
    for (std::size_t i = 0; i < config.instances.size(); ++i) {
      const auto& inst = config.instances[i];
      if (inst.model != state.model || inst.load != config::LoadMode::on_demand) continue;
      json::array gpus;
      for (const auto& id : inst.gpu_ids()) gpus.emplace_back(id);
      const auto memory = config::instance_memory(config, i);
      json::object o{{"name", inst.name}, {"gpus", std::move(gpus)}};
      o["memory"] = memory ? json::value(memory->per_gpu) : json::value(nullptr);
      o["source"] = memory ? memory->source : "unknown";
      instances.push_back(std::move(o));
    }
    list.push_back(json::object{{"model", state.model},
                                {"status", status_object(state)},
                                {"instances", std::move(instances)}});
  }
  const auto in_use = residency.memory_in_use();
  json::array gpus;
  for (const auto& gpu : config.gpus) {
    const auto used = in_use.find(gpu.id);
    gpus.push_back(json::object{{"id", gpu.id},
                                {"memory", gpu.memory},
                                {"in_use", used == in_use.end() ? 0 : used->second}});
  }
  return {{"models", std::move(list)}, {"gpus", std::move(gpus)}};
}

}  // namespace

std::string console_json(const obs::StatusSnapshot& status, const ModelCatalog& catalog,
                         const ConsoleFeed& feed, ProfileControl* profiles, ModelControl* residency,
                         const config::FleetConfig& config, json::array keys, bool history) {
  json::array instances;
  for (const auto& i : status.instances)
    instances.push_back(json::object{{"name", i.name},
                                     {"model", i.model},
                                     {"state", i.health},
                                     {"admin", i.admin},
                                     {"url", i.url},
                                     {"gpus", i.gpus},
                                     {"slots", i.slots},
                                     {"in_flight", i.in_flight},
                                     {"restarts", i.restarts},
                                     {"routable", i.routable},
                                     {"tokens_per_second", i.tokens_per_second},
                                     {"prefix_cache_hit_ratio", i.prefix_cache_hit_ratio}});
  json::array models;
  for (const auto& m : catalog.models()) {
    int queued = 0;
    for (const auto& s : status.models)
      if (s.name == m.name) queued = s.queued;
    json::array aliases;
    for (const auto& a : m.aliases) aliases.emplace_back(a);
    models.push_back(json::object{{"name", m.name}, {"aliases", aliases}, {"queued", queued}});
  }
  json::array findings;
  for (const auto& f : status.findings)
    findings.push_back(json::object{{"instance", f.instance},
                                    {"check", f.check},
                                    {"severity", f.severity},
                                    {"message", f.message}});
  json::array running;
  std::size_t running_total = 0;
  for (const auto& r : feed.running()) {
    if (++running_total > ConsoleFeed::kRunningShown) continue;
    running.push_back(json::object{{"id", r.record->id},
                                   {"key", *r.key},
                                   {"session", *r.session},
                                   {"model", r.record->model},
                                   {"instance", r.record->instance},
                                   {"elapsed", r.record->seconds_since_start()},
                                   {"ttft", r.record->ttfb}});
  }
  json::array recent;
  feed.each_recent([&](const FinishedRequest& r) {
    recent.push_back(json::object{{"id", r.id},
                                  {"key", r.key},
                                  {"session", r.session},
                                  {"model", r.model},
                                  {"instance", r.instance},
                                  {"status", r.status},
                                  {"outcome", r.outcome},
                                  {"ttft", r.ttft},
                                  {"duration", r.duration},
                                  {"completion_tokens", r.completion_tokens},
                                  {"at", r.at}});
  });
  json::object body{{"draining", status.draining},   {"instances", std::move(instances)},
                    {"models", std::move(models)},   {"findings", std::move(findings)},
                    {"running", std::move(running)}, {"recent", std::move(recent)}};
  body["running_total"] = running_total;
  body["keys"] = std::move(keys);
  body["profiles"] = profiles ? json::value(profiles_json(*profiles)) : json::value(nullptr);
  body["residency"] =
      residency ? json::value(residency_json(*residency, config)) : json::value(nullptr);
  if (!feed.history().empty()) body["point"] = point_json(feed.history().back());
  if (history) {
    json::array points;
    for (const auto& p : feed.history()) points.push_back(point_json(p));
    body["history"] = std::move(points);
  }
  return to_json_text(body);
}

net::awaitable<void> stream_events(http::Exchange& exchange, ConsoleFeed& feed,
                                   std::function<std::string(bool first)> picture,
                                   std::function<bool()> ending) {
  http::Headers headers;
  headers.add("Content-Type", "text/event-stream");
  headers.add("Cache-Control", "no-cache");
  headers.add("X-Accel-Buffering", "no");
  if (!co_await exchange.start_stream(200, std::move(headers))) co_return;
  net::steady_timer tick(co_await net::this_coro::executor);
  struct Listed {
    ConsoleFeed& feed;
    net::steady_timer& tick;
    ~Listed() { feed.remove_stream(tick); }
  } listed{feed, tick};
  feed.add_stream(tick);
  for (bool first = true; !ending(); first = false) {
    if (!co_await exchange.send_chunk("data: " + picture(first) + "\n\n")) co_return;
    tick.expires_after(std::chrono::seconds(1));
    // A client that leaves ends the stream at once, not at the next tick;
    // feed.changed() cancels the tick, which sends the next picture now.
    auto woke = co_await (tick.async_wait(net::as_tuple(net::use_awaitable)) ||
                          exchange.until_client_gone());
    if (woke.index() == 1) co_return;
  }
  co_await exchange.end_stream();
}

}  // namespace switchyard::gateway
