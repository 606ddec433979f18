#include "gateway/keys_routes.h"

#include <boost/json.hpp>

#include <chrono>
#include <optional>

#include "common/json_text.h"

namespace switchyard::gateway {

namespace json = boost::json;

namespace {

template <typename T>
json::value or_null(const std::optional<T>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

json::object limits_json(const tenancy::KeyLimits& l) {
  json::array models;
  for (const auto& m : l.models) models.emplace_back(m);
  return {{"models", std::move(models)},
          {"rpm", or_null(l.rpm)},
          {"tpm", or_null(l.tpm)},
          {"tokens_per_day", or_null(l.tokens_per_day)},
          {"max_concurrency", or_null(l.max_concurrency)},
          {"max_sessions", or_null(l.max_sessions)},
          {"session_idle", std::chrono::duration<double>(l.session_idle).count()},
          {"priority", l.priority},
          {"weight", l.weight}};
}

}  // namespace

json::array keys_json(const KeysView& view) {
  const auto now = std::chrono::system_clock::now();
  json::array out;
  for (const auto& e : view.keys.entries()) {
    const tenancy::KeyRecord* record = nullptr;
    for (const auto& r : view.stored)
      if (r.name == e.name) record = &r;
    const auto used = view.usage.of(e.name, now);
    const auto load = view.admit.load(e.name).value_or(Admit::KeyLoad{});
    out.push_back(json::object{
        {"name", e.name},
        {"source", record ? "stored" : "config"},
        {"prefix", record ? json::value(record->prefix) : json::value(nullptr)},
        {"revoked", e.revoked},
        {"limits", limits_json(e.limits)},
        {"today", json::object{{"requests", used.requests},
                               {"prompt_tokens", used.prompt_tokens},
                               {"completion_tokens", used.completion_tokens},
                               {"tokens", used.prompt_tokens + used.completion_tokens}}},
        {"running", load.running},
        // Seats are kept only for a key with max_sessions.
        {"sessions", e.limits.max_sessions ? json::value(load.sessions) : json::value(nullptr)},
        {"waiting", load.waiting}});
  }
  return out;
}

std::string keys_body(const KeysView& view) {
  return to_json_text(json::object{{"keys", keys_json(view)}});
}

}  // namespace switchyard::gateway
