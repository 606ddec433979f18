#include "gateway/info_routes.h"

#include <boost/json.hpp>

#include <chrono>

#include <fmt/format.h>

#include "common/json_text.h"
#include "openai/api_error.h"
#include "switchyard_version.h"

namespace switchyard::gateway {

namespace {

long long now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Residency's, or where no instance loads on demand, the always-on ones'.
profiles::ModelState state_of(const std::string& model, const InstanceTable& instances,
                              const std::vector<profiles::ModelState>& states) {
  for (const auto& s : states)
    if (s.model == model) return s;
  return profiles::always_on_state(model, instances);
}

// Listed: routable now, or (with on-demand models) configured at all.
bool served(const std::string& model, const InstanceTable& instances,
            const std::vector<profiles::ModelState>& states) {
  if (!states.empty()) return true;
  for (const auto& inst : instances)
    if (inst->model() == model && inst->routable()) return true;
  return false;
}

boost::json::object model_object(const config::ModelConfig& m, long long created) {
  boost::json::array aliases;
  for (const auto& a : m.aliases) aliases.emplace_back(a);
  return {{"id", m.name},
          {"object", "model"},
          {"created", created},
          {"owned_by", "switchyard"},
          {"aliases", std::move(aliases)}};
}

boost::json::object alias_object(const std::string& alias, const std::string& model,
                                 long long created) {
  return {{"id", alias},
          {"object", "model"},
          {"created", created},
          {"owned_by", "switchyard"},
          {"alias_of", model}};
}

}  // namespace

http::Response models_response(const ModelCatalog& catalog, const InstanceTable& instances,
                               const std::vector<profiles::ModelState>& states) {
  const auto created = now_seconds();
  boost::json::array data;
  for (const auto& m : catalog.models()) {
    if (!served(m.name, instances, states)) continue;
    const auto status = status_object(state_of(m.name, instances, states));
    auto object = model_object(m, created);
    object["status"] = status;
    data.push_back(std::move(object));
    for (const auto& a : m.aliases) {
      auto alias = alias_object(a, m.name, created);
      alias["status"] = status;
      data.push_back(std::move(alias));
    }
  }
  return http::json_response(200,
                             to_json_text(boost::json::object{{"object", "list"}, {"data", data}}));
}

http::Response model_response(std::string_view id, const ModelCatalog& catalog,
                              const InstanceTable& instances,
                              const std::vector<profiles::ModelState>& states) {
  const auto model = catalog.resolve(id);
  const config::ModelConfig* config = nullptr;
  for (const auto& m : catalog.models())
    if (model && m.name == *model) config = &m;
  if (!config || !served(config->name, instances, states))
    return openai::error_response(openai::ApiError::not_found(
        fmt::format("the model '{}' does not exist or has no ready instance; served models: {}", id,
                    catalog.describe()),
        "model_not_found"));
  const auto created = now_seconds();
  auto body = config->name == id ? model_object(*config, created)
                                 : alias_object(std::string(id), config->name, created);
  body["status"] = status_object(state_of(config->name, instances, states));
  return http::json_response(200, to_json_text(body));
}

http::Response root_response(bool head) {
  if (head) return http::json_response(200, {});
  return http::json_response(
      200, R"({"service":"switchyard","api":"/v1","models":"/v1/models","health":"/health",)"
           R"("dashboard":"/ui"})");
}

http::Response router_props_response(std::size_t instances) {
  // The fields llama.cpp's router gives (tools/server/server-models.cpp):
  // the model's own are placeholders there too.
  const boost::json::object body{
      {"role", "router"},
      {"max_instances", instances},
      {"models_autoload", true},
      {"model_alias", "switchyard"},
      {"model_path", "none"},
      {"default_generation_settings", {{"params", nullptr}, {"n_ctx", 0}}},
      {"ui_settings", boost::json::object{}},
      {"build_info", "switchyard " SWITCHYARD_VERSION},
      {"cors_proxy_enabled", false}};
  return http::json_response(200, boost::json::serialize(body));
}

http::Response health_response(const obs::StatusSnapshot& status, bool detail) {
  bool any = false;
  boost::json::array instances;
  for (const auto& inst : status.instances) {
    any |= inst.routable || inst.on_demand;
    if (!detail) continue;
    instances.push_back(boost::json::object{{"name", inst.name},
                                            {"model", inst.model},
                                            {"state", inst.health},
                                            {"admin", inst.admin},
                                            {"url", inst.url},
                                            {"gpus", inst.gpus},
                                            {"slots", inst.slots},
                                            {"in_flight", inst.in_flight}});
  }
  const auto& redis = status.redis;
  const bool redis_ok = !(redis.required && redis.state == "down");
  const bool ok = any && !status.draining && redis_ok;
  boost::json::object body{{"status", status.draining ? "draining" : ok ? "ok" : "unavailable"}};
  // Why it is down names its address: detail, as the instances' URLs are.
  // Without a key and without redis: the status alone, as before.
  if (detail || redis.state != "unconfigured") {
    boost::json::object redis_body{{"state", redis.state}, {"since", redis.since}};
    if (detail) redis_body["last_error"] = redis.last_error;
    body["redis"] = std::move(redis_body);
  }
  if (detail) {
    boost::json::array models;
    for (const auto& m : status.models)
      models.push_back(boost::json::object{{"name", m.name}, {"queued", m.queued}});
    body["instances"] = std::move(instances);
    body["models"] = std::move(models);
  }
  return http::json_response(ok ? 200 : 503, to_json_text(body));
}

boost::json::object status_object(const profiles::ModelState& s) {
  boost::json::object status{{"value", s.value}, {"args", boost::json::array{}}};
  if (s.failed) {
    status["failed"] = true;
    status["exit_code"] = s.exit_code.value_or(1);
    status["error"] = s.problem;
  }
  return status;
}

}  // namespace switchyard::gateway
