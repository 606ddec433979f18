#include "config/config_schema.h"

#include <boost/json.hpp>

#include <string_view>
#include <utility>

namespace switchyard::config {

namespace json = boost::json;

namespace {

json::object described(json::object o, std::string_view description) {
  if (!description.empty()) o["description"] = description;
  return o;
}

json::object string(std::string_view description) {
  return described({{"type", "string"}, {"minLength", 1}}, description);
}

json::object boolean(std::string_view description) {
  return described({{"type", "boolean"}}, description);
}

json::object integer(std::int64_t minimum, std::string_view description) {
  return described({{"type", "integer"}, {"minimum", minimum}}, description);
}

json::object number(double exclusive_minimum, std::string_view description) {
  return described({{"type", "number"}, {"exclusiveMinimum", exclusive_minimum}}, description);
}

json::object one_of(std::initializer_list<std::string_view> values, std::string_view description) {
  json::array list;
  for (auto v : values) list.emplace_back(v);
  return described({{"enum", std::move(list)}}, description);
}

// parse_duration: a number of seconds, or one with a unit.
json::object duration(std::string_view description) {
  return described(
      {{"anyOf", json::array{json::object{{"type", "number"}, {"minimum", 0}},
                             json::object{{"type", "string"},
                                          {"pattern", "^[0-9]+(\\.[0-9]+)?(ms|s|m|min|h)?$"}}}}},
      description);
}

// A byte size: bytes, or 24GiB, 512MiB, ...
json::object size(std::string_view description) {
  return described({{"type", json::array{"string", "integer"}}}, description);
}

json::object string_list(std::string_view description) {
  return described(
      {{"type", "array"}, {"items", json::object{{"type", "string"}, {"minLength", 1}}}},
      description);
}

// A mapping with exactly these fields (additionalProperties: false, as the
// loader refuses unknown fields).
json::object mapping(json::object properties, std::initializer_list<std::string_view> required = {},
                     std::string_view description = {}) {
  json::object o{{"type", "object"}, {"additionalProperties", false}};
  o["properties"] = std::move(properties);
  if (required.size()) {
    json::array r;
    for (auto f : required) r.emplace_back(f);
    o["required"] = std::move(r);
  }
  return described(std::move(o), description);
}

json::object instance() {
  json::object o = mapping(
      {{"name", string("Unique; in logs, metrics and /health (default instanceN)")},
       {"model", string("The model (a models[].name) this instance serves")},
       {"url", described({{"type", "string"}, {"pattern", "^http://"}},
                         "An engine already running, http://host:port")},
       {"command",
        string("An engine the gateway starts; ${PORT} ${GPUS} ${SWITCHYARD} substituted")},
       {"env", described({{"type", "object"},
                          {"additionalProperties",
                           json::object{{"type", json::array{"string", "number", "boolean"}}}}},
                         "Added to the command's environment")},
       {"gpus", described({{"type", json::array{"string", "integer", "array"}}},
                          "The value of ${GPUS}: \"0,1\" or a list")},
       {"slots", integer(1, "Requests the engine runs at once (default: its /props)")},
       {"api_key", string("Sent to the engine as Authorization: Bearer")},
       {"served_model", string("The model name the engine expects (default: model)")},
       {"sleep", boolean("vLLM sleep mode: the instance sleeps when its profile is inactive")},
       {"prestart",
        boolean("Start at launch even when its profile is inactive; on-demand: loaded at start")},
       {"load", one_of({"always", "on-demand"}, "on-demand: started when a request needs it")},
       {"ttl", duration("on-demand: unloaded after this long with nothing in flight or queued")},
       {"memory", size("Memory per GPU (default: plan's estimate from the command)")}},
      {"model"}, "One engine");
  o["oneOf"] = json::array{json::object{{"required", json::array{"url"}}},
                           json::object{{"required", json::array{"command"}}}};
  return o;
}

json::object api_key() {
  json::object key =
      mapping({{"key", string("The secret clients send")},
               {"name", string("What logs and metrics say")},
               {"models", string_list("Models the key may use (default: all)")},
               {"rpm", integer(1, "Requests per minute")},
               {"tpm", integer(1, "Tokens per minute")},
               {"tokens_per_day", integer(1, "Tokens per UTC day")},
               {"max_concurrency", integer(1, "Requests in flight at once; more wait")},
               {"max_sessions", integer(1, "Agent sessions active at once")},
               {"session_idle", duration("A session's seat frees after this long idle")},
               {"priority", described({{"type", "integer"}}, "Higher bands are served first")},
               {"weight", number(0, "Share within a priority band")}},
              {"key"});
  return {{"anyOf", json::array{string("The secret clients send"), std::move(key)}}};
}

json::object durations(std::initializer_list<std::string_view> names) {
  json::object o;
  for (auto n : names) o[n] = duration("");
  return o;
}

json::object switching() {
  json::object p = durations({"drain_timeout", "min_dwell", "max_hold", "sustain", "prefill_bound",
                              "idle", "switch_cost"});
  p["mode"] = one_of({"manual", "on-demand"}, "Who switches profiles");
  p["on_drain_timeout"] = one_of({"wait", "abort"}, "When draining outlasts drain_timeout");
  p["queue_depth"] = integer(1, "Queued requests that call for a switch");
  p["estimates"] = described(
      {{"type", "object"},
       {"additionalProperties",
        mapping({{"decode_tps", number(0, "Tokens/s of one sequence")},
                 {"prefill_tps", number(0, "Prompt tokens/s at depth 0")},
                 {"prefill_half_depth", number(0, "Depth at which prefill runs at half speed")},
                 {"context", integer(1, "Tokens one request may hold")}})}},
      "Per instance name: the on-demand policy's rate estimates");
  return mapping(std::move(p), {}, "Profile switching (docs/profiles.md)");
}

json::object top_level() {
  json::object p;
  p["listen"] = string("host:port the gateway listens on (default 127.0.0.1:8080)");
  p["models"] =
      described({{"type", "array"},
                 {"items", mapping({{"name", string("The canonical name")},
                                    {"aliases", string_list("Other names clients may use")}},
                                   {"name"})}},
                "Models and their aliases (default: every instance's model)");
  p["instances"] =
      described({{"type", "array"}, {"minItems", 1}, {"items", instance()}}, "The engines");
  p["api_keys"] = described({{"type", "array"}, {"items", api_key()}}, "Static API keys");
  p["admin_key"] = string("The admin routes' key (default: loopback clients only)");
  p["routing"] = described(
      {{"anyOf",
        json::array{
            one_of({"least-outstanding", "round-robin", "prefix-affinity", "session"}, ""),
            mapping(
                {{"policy",
                  one_of({"least-outstanding", "round-robin", "prefix-affinity", "session"}, "")},
                 {"balance_factor", described({{"type", "number"}, {"minimum", 1}}, "")},
                 {"route_header", boolean("Send X-Switchyard-Route")},
                 {"home_wait", duration("How long a request may wait for its home")}})}}},
      "The routing policy (docs/routing.md)");
  p["body_limit"] = described({{"type", json::array{"string", "integer"}}},
                              "Largest request body: bytes or 32MiB, 1GB, ...");
  p["max_connections"] = integer(1, "Open client connections at most");
  p["attempts"] = integer(1, "Attempts per request before the first byte");
  p["retry_budget"] = duration("No attempt starts after this long");
  p["health_detail"] = one_of({"public", "keyed"}, "Who sees instance detail in /health");
  p["timeouts"] = mapping(durations({"connect", "first_byte", "stream_idle", "client_header",
                                     "client_body", "startup", "drain", "stop"}));
  json::object health =
      durations({"interval", "backoff", "backoff_max", "crash_window", "metrics_interval"});
  health["crash_loop"] = integer(1, "Exits within crash_window that stop restarts");
  p["health"] = mapping(std::move(health));
  p["queue"] = mapping({{"max_length", integer(0, "Waiting requests per model")},
                        {"max_wait", duration("Longest wait for a slot")}});
  p["state_db"] = string("The SQLite state database (default switchyard.db beside this file)");
  p["profiles"] = described({{"type", "object"}, {"additionalProperties", string_list("")}},
                            "Profile name to its instances; the first is active at start");
  p["switching"] = switching();
  p["redis"] = described({{"type", "string"}, {"pattern", "^redis://"}},
                         "Limits shared with other gateways: redis://host:port/db");
  p["redis_down"] = one_of({"reject", "local"}, "While Redis is unreachable");
  p["redis_lease_ttl"] = duration("A held lease in Redis lasts this long unless renewed");
  p["redis_poll"] = duration("A waiting request asks Redis again at least this often");
  p["redis_secret"] = string("Shared by the gateways: key records in Redis are signed with it");
  p["admin_hosts"] = string_list(
      "Host names the admin API and /ui answer besides the listen "
      "address and localhost");
  p["gpus"] =
      described({{"type", "array"},
                 {"items", mapping({{"id", described({{"type", json::array{"string", "integer"}}},
                                                     "As instances name it in their gpus")},
                                    {"memory", size("The card's memory")}},
                                   {"id", "memory"})}},
                "The box's cards, for on-demand models' memory (docs/models.md)");
  p["swapping"] =
      mapping({{"policy", one_of({"batch", "fifo"}, "Which model loads next")},
               {"max_wait", duration("No request waits longer behind other models")},
               {"min_resident", duration("A loaded model with work stays this long")},
               {"progress", duration("SSE comment lines to a held stream, this often")}},
              {}, "How on-demand models take turns (docs/models.md)");
  p["tracing"] =
      mapping({{"endpoint", described({{"type", "string"}, {"pattern", "^http://"}},
                                      "OTLP/HTTP collector, http://host:4318")},
               {"sample", described({{"type", "number"}, {"minimum", 0}, {"maximum", 1}},
                                    "Share of new traces recorded")},
               {"service_name", string("service.name of the spans (default switchyard)")}},
              {"endpoint"}, "OpenTelemetry traces (docs/tracing.md)");
  p["log"] = mapping({{"format", one_of({"text", "json"}, "json: one JSON object per line")}});
  return p;
}

}  // namespace

json::value fleet_config_schema() {
  json::object schema{{"$schema", "https://json-schema.org/draft/2020-12/schema"},
                      {"title", "Switchyard fleet.yaml"}};
  for (auto& member : mapping(top_level(), {"instances"})) schema[member.key()] = member.value();
  return schema;
}

}  // namespace switchyard::config
