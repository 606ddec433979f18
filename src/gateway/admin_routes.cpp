#include "gateway/admin_routes.h"

#include <boost/json.hpp>

#include <chrono>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/json_text.h"
#include "openai/api_error.h"

namespace switchyard::gateway {

namespace json = boost::json;
using net_awaitable = boost::asio::awaitable<http::Response>;
using openai::ApiError;

namespace {

double epoch_seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

json::object record_json(const profiles::SwitchRecord& r) {
  return {{"from", r.from},
          {"to", r.to},
          {"reason", r.reason},
          {"ok", r.ok},
          {"error", r.ok ? json::value(nullptr) : json::value(r.error)},
          {"seconds", r.seconds},
          {"drain_seconds", r.drain_seconds},
          {"stop_seconds", r.stop_seconds},
          {"start_seconds", r.start_seconds},
          {"warm_seconds", r.warm_seconds}};
}

http::Response error(const ApiError& e) {
  return openai::error_response(e);
}

ApiError conflict(std::string message) {
  return ApiError{409, std::move(message), "invalid_request_error", {}, "conflict"};
}

fleet::Instance* find_instance(fleet::Fleet& fleet, std::string_view name) {
  fleet::Instance* found = nullptr;
  for (const auto& inst : fleet.instances())
    if (inst->name() == name && inst->state != fleet::InstanceState::removed) found = inst.get();
  return found;
}

http::Response instance_action(AdminView& view, std::string_view rest) {
  // rest: "{name}/drain" or "{name}/enable"
  const auto slash = rest.rfind('/');
  const auto name = slash == std::string_view::npos ? std::string_view{} : rest.substr(0, slash);
  const auto action = slash == std::string_view::npos ? rest : rest.substr(slash + 1);
  if (name.empty() || (action != "drain" && action != "enable"))
    return error(ApiError::not_found(
        fmt::format("no admin route /admin/instances/{}; use /admin/instances/NAME/drain or "
                    "/admin/instances/NAME/enable",
                    rest),
        "unknown_url"));
  auto* inst = find_instance(view.fleet, name);
  if (!inst)
    return error(ApiError::not_found(fmt::format("no instance named '{}'", name), "not_found"));
  if (inst->admin() == fleet::AdminState::parked)
    return error(conflict(fmt::format(
        "instance '{}' is parked by its profile; switch profiles with POST /admin/profile", name)));
  // Only the operator's own cause: enable does not end a switch's drain.
  spdlog::info("admin: instance {} {}", name, action);
  view.fleet.set_cause(inst->index, fleet::AdminCause::operator_drain, action == "drain");
  return http::json_response(200, to_json_text(json::object{{"instance", inst->name()},
                                                            {"admin", to_string(inst->admin())},
                                                            {"causes", inst->causes.describe()}}));
}

// POST /models/load and /models/unload, in llama.cpp router mode's shapes.
http::Response model_action(AdminView& view, const http::Request& request, bool load) {
  if (view.draining)
    return error(ApiError::unavailable("the gateway is shutting down", "shutting_down"));
  if (!view.models)
    return error(ApiError::not_found("no load: on-demand instances are configured (docs/models.md)",
                                     "no_models"));
  boost::system::error_code ec;
  const auto doc = json::parse(request.body, ec);
  const json::string* wanted = nullptr;
  if (!ec && doc.is_object())
    if (const auto* m = doc.get_object().if_contains("model"); m && m->is_string())
      wanted = &m->get_string();
  if (!wanted)
    return error(ApiError::bad_request(
        "the body must be a JSON object with 'model' (a string), e.g. {\"model\":\"coder\"}",
        "model"));
  auto& residency = view.models->residency();
  const std::string model(*wanted);
  if (!residency.manages(model)) {
    std::string names;
    for (const auto& s : residency.models())
      if (residency.manages(s.model)) names += (names.empty() ? "" : ", ") + s.model;
    return error(ApiError::not_found(
        fmt::format("model '{}' is not found; on-demand models: {}", model, names),
        "model_not_found"));
  }
  spdlog::info("admin: {} model {}", load ? "load" : "unload", model);
  if (auto refused = load ? residency.load(model) : residency.unload(model))
    return error(ApiError::bad_request(*refused, "model"));
  return http::json_response(200, to_json_text(json::object{{"success", true}}));
}

}  // namespace

json::object profiles_json(ProfileControl& control) {
  auto& sw = control.switcher();
  json::array profiles;
  for (const auto& p : sw.profiles()) {
    json::array members;
    for (const auto& n : p.instances) members.emplace_back(n);
    profiles.push_back(json::object{
        {"name", p.name}, {"instances", std::move(members)}, {"active", p.name == sw.active()}});
  }
  json::array decisions;
  for (const auto& d : control.decisions()) decisions.emplace_back(d);
  return {{"active", sw.active()},
          {"state", to_string(sw.phase())},
          {"target", sw.switching() ? json::value(sw.target()) : json::value(nullptr)},
          {"since", epoch_seconds(sw.since())},
          {"mode", control.options().mode == config::SwitchingOptions::Mode::on_demand ? "on-demand"
                                                                                       : "manual"},
          {"last_switch", sw.last() ? json::value(record_json(*sw.last())) : json::value(nullptr)},
          {"decisions", std::move(decisions)},
          {"profiles", std::move(profiles)}};
}

std::string admin_status_json(const AdminView& view) {
  const auto snap = view.snapshot();
  json::object body;
  if (view.profiles) {
    body = profiles_json(*view.profiles);
  } else {
    body["active"] = nullptr;
    body["state"] = "active";
    body["target"] = nullptr;
    body["since"] = nullptr;
    body["mode"] = "none";
    body["last_switch"] = nullptr;
    body["decisions"] = json::array{};
    body["profiles"] = json::array{};
  }
  json::array queue;
  for (const auto& m : snap.models)
    queue.push_back(json::object{{"model", m.name}, {"queued", m.queued}});
  body["queue"] = std::move(queue);
  json::array instances;
  for (const auto& st : snap.instances) {
    const auto* inst = find_instance(view.fleet, st.name);
    instances.push_back(json::object{{"name", st.name},
                                     {"model", st.model},
                                     {"state", st.health},
                                     {"admin", st.admin},
                                     {"causes", st.admin_causes},
                                     {"asleep", inst && inst->asleep},
                                     {"gpus", st.gpus},
                                     {"slots", st.slots},
                                     {"in_flight", st.in_flight}});
  }
  body["instances"] = std::move(instances);
  body["draining"] = snap.draining;
  return to_json_text(body);
}

net_awaitable admin_response(AdminView view, const http::Request& request) {
  const std::string_view path = request.head.path();
  if (path == "/admin/status") co_return http::json_response(200, admin_status_json(view));
  if (path == "/admin/keys") co_return http::json_response(200, view.keys());
  constexpr std::string_view kInstances = "/admin/instances/";
  if (path.starts_with(kInstances)) co_return instance_action(view, path.substr(kInstances.size()));
  if (path == "/models/load" || path == "/models/unload")
    co_return model_action(view, request, path == "/models/load");
  // POST /admin/profile
  if (!view.profiles)
    co_return error(
        ApiError::not_found("no profiles are configured (see docs/profiles.md)", "no_profiles"));
  boost::system::error_code ec;
  const auto doc = json::parse(request.body, ec);
  const json::string* wanted = nullptr;
  if (!ec && doc.is_object())
    if (const auto* p = doc.get_object().if_contains("profile"); p && p->is_string())
      wanted = &p->get_string();
  if (!wanted)
    co_return error(ApiError::bad_request(
        "the body must be a JSON object with 'profile' (a string), e.g. {\"profile\":\"tp2\"}",
        "profile"));
  auto& sw = view.profiles->switcher();
  const std::string target(*wanted);
  if (target == sw.active() && !sw.switching())
    co_return http::json_response(
        200, to_json_text(json::object{{"active", target}, {"switched", false}}));
  if (auto refused = sw.begin(target, "manual")) {
    if (sw.switching()) co_return error(conflict(*refused));
    co_return error(ApiError::not_found(*refused, "unknown_profile"));
  }
  const auto record = co_await sw.wait_done();
  if (record && record->ok)
    co_return http::json_response(
        200, to_json_text(json::object{
                 {"active", sw.active()}, {"switched", true}, {"switch", record_json(*record)}}));
  const std::string why = record ? record->error : std::string("the switch did not finish");
  co_return error(
      ApiError::unavailable(fmt::format("the switch to '{}' failed and was rolled back to '{}': {}",
                                        target, sw.active(), why),
                            "switch_failed"));
}

}  // namespace switchyard::gateway
