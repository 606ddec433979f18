#include "fleet/fleet_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "http/url.h"

namespace switchyard::fleet {

namespace {

// Thrown inside this file only, caught in parse_fleet_config: config loading
// is start-up, where an exception is the simplest way to stop at the first
// error.
struct ConfigError {
  int line;  // 1-based; 0 when unknown
  std::string message;
};

[[noreturn]] void fail(const YAML::Node& node, std::string message) {
  const int line = node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
  throw ConfigError{line, std::move(message)};
}

std::string describe(const YAML::Node& node) {
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "nothing";
}

void check_keys(const YAML::Node& map, const std::string& where,
                std::initializer_list<std::string_view> allowed) {
  for (const auto& kv : map) {
    const auto key = kv.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      fail(kv.first, fmt::format("{}{}: unknown field (expected one of: {})", where,
                                 where.empty() ? key : "." + key, list));
    }
  }
}

std::string scalar(const YAML::Node& node, const std::string& field) {
  if (!node.IsScalar())
    fail(node, fmt::format("{}: expected a string, got {}", field, describe(node)));
  return node.Scalar();
}

std::string non_empty(const YAML::Node& node, const std::string& field) {
  auto s = scalar(node, field);
  if (s.empty()) fail(node, fmt::format("{}: must not be empty", field));
  return s;
}

int positive_int(const YAML::Node& node, const std::string& field) {
  const auto s = scalar(node, field);
  int value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || value < 1)
    fail(node, fmt::format("{}: expected a positive integer, got '{}'", field, s));
  return value;
}

std::vector<std::string> string_list(const YAML::Node& node, const std::string& field) {
  if (!node.IsSequence())
    fail(node, fmt::format("{}: expected a list of strings, got {}", field, describe(node)));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < node.size(); ++i)
    out.push_back(non_empty(node[i], fmt::format("{}[{}]", field, i)));
  return out;
}

std::chrono::milliseconds duration(const YAML::Node& node, const std::string& field) {
  auto d = parse_duration(scalar(node, field));
  if (!d) fail(node, fmt::format("{}: {}", field, d.error().message));
  return *d;
}

ModelConfig parse_model(const YAML::Node& node, std::size_t i) {
  const auto where = fmt::format("models[{}]", i);
  if (!node.IsMap()) fail(node, where + ": expected a mapping with 'name'");
  check_keys(node, where, {"name", "aliases"});
  ModelConfig m;
  if (!node["name"]) fail(node, where + ".name: required");
  m.name = non_empty(node["name"], where + ".name");
  if (node["aliases"]) m.aliases = string_list(node["aliases"], where + ".aliases");
  return m;
}

InstanceConfig parse_instance(const YAML::Node& node, std::size_t i) {
  const auto where = fmt::format("instances[{}]", i);
  if (!node.IsMap()) fail(node, where + ": expected a mapping");
  check_keys(
      node, where,
      {"name", "model", "url", "command", "env", "gpus", "slots", "api_key", "served_model"});
  InstanceConfig inst;
  inst.name =
      node["name"] ? non_empty(node["name"], where + ".name") : fmt::format("instance{}", i);
  if (!node["model"]) fail(node, where + ".model: required (the model this instance serves)");
  inst.model = non_empty(node["model"], where + ".model");
  if (node["url"]) {
    inst.url = non_empty(node["url"], where + ".url");
    // Checked here so that a typo stops the start (exit 2) rather than
    // leaving the instance down. Credentials are never echoed.
    if (redact_url(*inst.url) != *inst.url)
      fail(node["url"], fmt::format("{}.url: '{}': user:password in the URL is not supported; "
                                    "use api_key",
                                    where, redact_url(*inst.url)));
    if (auto url = http::parse_url(*inst.url); !url)
      fail(node["url"], fmt::format("{}.url: {}", where, url.error().message));
  }
  if (node["command"]) inst.command = non_empty(node["command"], where + ".command");
  if (inst.url.has_value() == inst.command.has_value())
    fail(node, where +
                   ": give exactly one of 'url' (an engine already running) and 'command' "
                   "(an engine the gateway starts)");
  if (const auto env = node["env"]) {
    if (!env.IsMap()) fail(env, where + ".env: expected a mapping of NAME: value");
    for (const auto& kv : env) {
      const auto key = kv.first.as<std::string>();
      inst.env[key] = scalar(kv.second, where + ".env." + key);
    }
  }
  if (const auto gpus = node["gpus"]) {
    if (gpus.IsSequence()) {
      for (std::size_t g = 0; g < gpus.size(); ++g)
        inst.gpus += (g ? "," : "") + scalar(gpus[g], fmt::format("{}.gpus[{}]", where, g));
    } else {
      inst.gpus = scalar(gpus, where + ".gpus");
    }
  }
  if (node["slots"]) inst.slots = positive_int(node["slots"], where + ".slots");
  if (node["api_key"]) inst.api_key = non_empty(node["api_key"], where + ".api_key");
  if (node["served_model"])
    inst.served_model = non_empty(node["served_model"], where + ".served_model");
  return inst;
}

void parse_timeouts(const YAML::Node& node, Timeouts& t) {
  if (!node.IsMap()) fail(node, "timeouts: expected a mapping");
  check_keys(node, "timeouts",
             {"connect", "first_byte", "stream_idle", "client_header", "client_body", "startup",
              "drain", "stop"});
  const std::pair<const char*, std::chrono::milliseconds*> fields[] = {
      {"connect", &t.connect},
      {"first_byte", &t.first_byte},
      {"stream_idle", &t.stream_idle},
      {"client_header", &t.client_header},
      {"client_body", &t.client_body},
      {"startup", &t.startup},
      {"drain", &t.drain},
      {"stop", &t.stop}};
  for (auto [name, target] : fields) {
    if (!node[name]) continue;
    const std::string field = std::string("timeouts.") + name;
    *target = duration(node[name], field);
    // 0 means "do not wait" for these two; for the others it would fail
    // every connect, request or start.
    const bool zero_ok = target == &t.drain || target == &t.stop;
    if (target->count() == 0 && !zero_ok)
      fail(node[name], field + ": must be above 0 (0 would time out every time)");
  }
}

void parse_health(const YAML::Node& node, HealthOptions& h) {
  if (!node.IsMap()) fail(node, "health: expected a mapping");
  check_keys(node, "health", {"interval", "backoff", "backoff_max", "crash_loop", "crash_window"});
  if (node["interval"]) h.interval = duration(node["interval"], "health.interval");
  if (node["backoff"]) h.backoff = duration(node["backoff"], "health.backoff");
  if (node["backoff_max"]) h.backoff_max = duration(node["backoff_max"], "health.backoff_max");
  if (node["crash_loop"]) h.crash_loop = positive_int(node["crash_loop"], "health.crash_loop");
  if (node["crash_window"]) h.crash_window = duration(node["crash_window"], "health.crash_window");
  if (h.interval.count() == 0) fail(node["interval"], "health.interval: must be above 0");
  if (h.backoff.count() == 0) fail(node["backoff"], "health.backoff: must be above 0");
  if (h.backoff_max < h.backoff)
    fail(node["backoff_max"] ? node["backoff_max"] : node,
         "health.backoff_max: must be at least health.backoff");
}

void parse_queue(const YAML::Node& node, QueueOptions& q) {
  if (!node.IsMap()) fail(node, "queue: expected a mapping");
  check_keys(node, "queue", {"max_length", "max_wait"});
  if (node["max_length"]) {
    const auto s = scalar(node["max_length"], "queue.max_length");
    q.max_length = s == "0" ? 0 : positive_int(node["max_length"], "queue.max_length");
  }
  if (node["max_wait"]) q.max_wait = duration(node["max_wait"], "queue.max_wait");
}

RoutingPolicy routing_policy(const YAML::Node& node, const std::string& field) {
  static const std::pair<const char*, RoutingPolicy> names[] = {
      {"least-outstanding", RoutingPolicy::least_outstanding},
      {"round-robin", RoutingPolicy::round_robin},
      {"prefix-affinity", RoutingPolicy::prefix_affinity},
      {"session", RoutingPolicy::session}};
  const auto name = scalar(node, field);
  for (const auto& [n, policy] : names)
    if (name == n) return policy;
  fail(node, fmt::format("{}: '{}' is not a policy (least-outstanding, round-robin, "
                         "prefix-affinity, session)",
                         field, name));
}

// `routing: NAME` or `routing: {policy, balance_factor, route_header}`.
void parse_routing(const YAML::Node& node, RoutingOptions& r) {
  if (!node.IsMap()) {
    r.policy = routing_policy(node, "routing");
    return;
  }
  check_keys(node, "routing", {"policy", "balance_factor", "route_header"});
  if (node["policy"]) r.policy = routing_policy(node["policy"], "routing.policy");
  if (const auto factor = node["balance_factor"]) {
    const auto text = scalar(factor, "routing.balance_factor");
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(v >= 1) || v > 1e6)
      fail(factor, fmt::format("routing.balance_factor: '{}' is not a number of at least 1", text));
    r.balance_factor = v;
  }
  if (const auto header = node["route_header"]) {
    const auto text = scalar(header, "routing.route_header");
    if (text != "true" && text != "false")
      fail(header, fmt::format("routing.route_header: '{}' is not true or false", text));
    r.route_header = text == "true";
  }
}

// Cross-field rules: unique names, aliases that do not collide, instances
// that name a known model.
void validate(const YAML::Node& root, FleetConfig& c) {
  std::set<std::string> names;
  for (std::size_t i = 0; i < c.models.size(); ++i) {
    const auto& m = c.models[i];
    for (const auto& n : std::vector<std::string>{m.name}) {
      if (!names.insert(n).second)
        fail(root["models"][i], fmt::format("models[{}].name: '{}' is used twice", i, n));
    }
    for (const auto& a : m.aliases) {
      if (!names.insert(a).second)
        fail(root["models"][i],
             fmt::format("models[{}].aliases: '{}' is already a model name or alias", i, a));
    }
  }
  std::set<std::string> instance_names;
  for (std::size_t i = 0; i < c.instances.size(); ++i) {
    const auto& inst = c.instances[i];
    const auto node = root["instances"][i];
    if (!instance_names.insert(inst.name).second)
      fail(node, fmt::format("instances[{}].name: '{}' is used twice", i, inst.name));
    const bool known = std::any_of(c.models.begin(), c.models.end(),
                                   [&](const ModelConfig& m) { return m.name == inst.model; });
    if (!known) {
      std::string list;
      for (const auto& m : c.models) list += (list.empty() ? "" : ", ") + m.name;
      fail(node, fmt::format("instances[{}].model: '{}' is not one of the models ({})", i,
                             inst.model, list));
    }
  }
}

}  // namespace

Result<std::chrono::milliseconds> parse_duration(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  std::string_view unit(end, text.data() + text.size() - end);
  double ms_per_unit = 0;
  if (unit.empty() || unit == "s")
    ms_per_unit = 1000;
  else if (unit == "ms")
    ms_per_unit = 1;
  else if (unit == "m" || unit == "min")
    ms_per_unit = 60000;
  else if (unit == "h")
    ms_per_unit = 3600000;
  if (ec != std::errc() || ms_per_unit == 0 || value < 0 || !std::isfinite(value))
    return Error{fmt::format("'{}' is not a duration (use e.g. 250ms, 5s, 2m)", text)};
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::llround(value * ms_per_unit)));
}

Result<std::uint64_t> parse_size(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  std::string unit(end, text.data() + text.size() - end);
  std::transform(unit.begin(), unit.end(), unit.begin(), ::tolower);
  static const std::pair<const char*, double> units[] = {
      {"", 1},     {"b", 1},           {"k", 1e3}, {"kb", 1e3}, {"kib", 1024.0},      {"m", 1e6},
      {"mb", 1e6}, {"mib", 1048576.0}, {"g", 1e9}, {"gb", 1e9}, {"gib", 1073741824.0}};
  for (auto [u, factor] : units) {
    if (unit == u && ec == std::errc() && value > 0 && std::isfinite(value))
      return static_cast<std::uint64_t>(value * factor);
  }
  return Error{fmt::format("'{}' is not a size (use e.g. 32MiB, 1GB, 65536)", text)};
}

Result<FleetConfig> parse_fleet_config(std::string_view yaml, const std::string& source) {
  FleetConfig c;
  c.source = source;
  try {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(yaml));
    } catch (const YAML::ParserException& e) {
      throw ConfigError{e.mark.line + 1, "invalid YAML: " + e.msg};
    }
    if (!root.IsMap()) throw ConfigError{1, "expected a mapping with 'models' and 'instances'"};
    check_keys(root, "",
               {"listen", "models", "instances", "api_keys", "admin_key", "routing", "body_limit",
                "max_connections", "attempts", "retry_budget", "health_detail", "timeouts",
                "health", "queue"});
    if (root["listen"]) c.listen = non_empty(root["listen"], "listen");
    if (const auto models = root["models"]) {
      if (!models.IsSequence()) fail(models, "models: expected a list");
      for (std::size_t i = 0; i < models.size(); ++i) c.models.push_back(parse_model(models[i], i));
    }
    const auto instances = root["instances"];
    if (!instances || !instances.IsSequence() || instances.size() == 0)
      fail(instances ? instances : root, "instances: required, a non-empty list of engines");
    for (std::size_t i = 0; i < instances.size(); ++i)
      c.instances.push_back(parse_instance(instances[i], i));
    if (c.models.empty()) {
      // No models section: every model an instance names, without aliases.
      for (const auto& inst : c.instances) {
        if (std::none_of(c.models.begin(), c.models.end(),
                         [&](const ModelConfig& m) { return m.name == inst.model; }))
          c.models.push_back({inst.model, {}});
      }
    }
    if (const auto keys = root["api_keys"]) c.api_keys = string_list(keys, "api_keys");
    if (const auto admin = root["admin_key"]) c.admin_key = non_empty(admin, "admin_key");
    if (const auto routing = root["routing"]) parse_routing(routing, c.routing);
    if (const auto limit = root["body_limit"]) {
      auto size = parse_size(scalar(limit, "body_limit"));
      if (!size) fail(limit, "body_limit: " + size.error().message);
      c.body_limit = *size;
    }
    if (const auto cap = root["max_connections"])
      c.max_connections = static_cast<std::size_t>(positive_int(cap, "max_connections"));
    if (const auto attempts = root["attempts"]) c.attempts = positive_int(attempts, "attempts");
    if (const auto budget = root["retry_budget"]) c.retry_budget = duration(budget, "retry_budget");
    if (const auto detail = root["health_detail"]) {
      const auto who = scalar(detail, "health_detail");
      if (who != "public" && who != "keyed")
        fail(detail, fmt::format("health_detail: '{}' is not one of: public, keyed", who));
      c.health_detail_public = who == "public";
    }
    if (const auto timeouts = root["timeouts"]) parse_timeouts(timeouts, c.timeouts);
    if (const auto health = root["health"]) parse_health(health, c.health);
    if (const auto queue = root["queue"]) parse_queue(queue, c.queue);
    validate(root, c);
  } catch (const ConfigError& e) {
    return Error{e.line > 0 ? fmt::format("{}:{}: {}", source, e.line, e.message)
                            : fmt::format("{}: {}", source, e.message)};
  } catch (const YAML::Exception& e) {
    return Error{fmt::format("{}:{}: {}", source, e.mark.line + 1, e.msg)};
  }
  return c;
}

std::vector<std::string> restart_only_changes(const FleetConfig& running, const FleetConfig& next) {
  std::vector<std::string> changed;
  const auto check = [&](bool differs, const char* name) {
    if (differs) changed.emplace_back(name);
  };
  check(running.listen != next.listen, "listen");
  check(running.body_limit != next.body_limit, "body_limit");
  check(running.max_connections != next.max_connections, "max_connections");
  check(running.routing != next.routing, "routing");
  const auto& a = running.timeouts;
  const auto& b = next.timeouts;
  check(a.connect != b.connect, "timeouts.connect");
  check(a.first_byte != b.first_byte, "timeouts.first_byte");
  check(a.stream_idle != b.stream_idle, "timeouts.stream_idle");
  check(a.client_header != b.client_header, "timeouts.client_header");
  check(a.client_body != b.client_body, "timeouts.client_body");
  check(a.startup != b.startup, "timeouts.startup");
  check(a.drain != b.drain, "timeouts.drain");
  check(a.stop != b.stop, "timeouts.stop");
  const auto& h = running.health;
  const auto& k = next.health;
  check(h.interval != k.interval, "health.interval");
  check(h.backoff != k.backoff, "health.backoff");
  check(h.backoff_max != k.backoff_max, "health.backoff_max");
  check(h.crash_loop != k.crash_loop, "health.crash_loop");
  check(h.crash_window != k.crash_window, "health.crash_window");
  check(running.queue.max_length != next.queue.max_length, "queue.max_length");
  check(running.queue.max_wait != next.queue.max_wait, "queue.max_wait");
  return changed;
}

FleetConfig keep_restart_only_settings(const FleetConfig& running, FleetConfig next) {
  next.listen = running.listen;
  next.body_limit = running.body_limit;
  next.max_connections = running.max_connections;
  next.routing = running.routing;
  next.timeouts = running.timeouts;
  next.health = running.health;
  next.queue = running.queue;
  return next;
}

std::size_t default_max_connections(std::uint64_t fd_limit, const FleetConfig& config) {
  std::uint64_t reserve = 64;
  for (const auto& inst : config.instances)
    reserve += std::max<std::uint64_t>(32, static_cast<std::uint64_t>(inst.slots.value_or(1))) + 2;
  const std::uint64_t cap = fd_limit > reserve ? (fd_limit - reserve) / 2 : 0;
  return static_cast<std::size_t>(std::max<std::uint64_t>(cap, 16));
}

std::string redact_url(std::string_view url) {
  const auto scheme = url.find("://");
  const std::size_t from = scheme == std::string_view::npos ? 0 : scheme + 3;
  const auto authority_end = std::min(url.find('/', from), url.size());
  const auto at = url.substr(0, authority_end).rfind('@');
  if (at == std::string_view::npos || at < from) return std::string(url);
  return std::string(url.substr(0, from)) + "***" + std::string(url.substr(at));
}

Result<FleetConfig> load_fleet_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{fmt::format("{}: cannot open the config file", path)};
  std::stringstream text;
  text << in.rdbuf();
  return parse_fleet_config(text.str(), path);
}

}  // namespace switchyard::fleet
