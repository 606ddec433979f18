#include "config/fleet_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "http/url.h"

namespace switchyard::config {

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

bool boolean(const YAML::Node& node, const std::string& field) {
  const auto s = scalar(node, field);
  if (s == "true") return true;
  if (s == "false") return false;
  fail(node, fmt::format("{}: expected true or false, got '{}'", field, s));
}

double positive_number(const YAML::Node& node, const std::string& field) {
  const auto s = scalar(node, field);
  double value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || !(value > 0) || !std::isfinite(value))
    fail(node, fmt::format("{}: expected a positive number, got '{}'", field, s));
  return value;
}

std::chrono::milliseconds duration(const YAML::Node& node, const std::string& field) {
  auto d = parse_duration(scalar(node, field));
  if (!d) fail(node, fmt::format("{}: {}", field, d.error().message));
  return *d;
}

std::uint64_t byte_size(const YAML::Node& node, const std::string& field) {
  auto s = parse_size(scalar(node, field));
  if (!s) fail(node, fmt::format("{}: {}", field, s.error().message));
  return *s;
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
  check_keys(node, where,
             {"name", "model", "url", "command", "env", "gpus", "slots", "api_key", "served_model",
              "sleep", "prestart", "load", "ttl", "memory"});
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
  if (node["sleep"]) inst.sleep = boolean(node["sleep"], where + ".sleep");
  if (node["prestart"]) inst.prestart = boolean(node["prestart"], where + ".prestart");
  if (const auto load = node["load"]) {
    const auto mode = scalar(load, where + ".load");
    if (mode != "always" && mode != "on-demand")
      fail(load, fmt::format("{}.load: '{}' is not one of: always, on-demand", where, mode));
    inst.load = mode == "always" ? LoadMode::always : LoadMode::on_demand;
  }
  if (const auto ttl = node["ttl"]) {
    inst.ttl = duration(ttl, where + ".ttl");
    if (inst.ttl->count() == 0) fail(ttl, where + ".ttl: must be above 0");
  }
  if (const auto memory = node["memory"]) inst.memory = byte_size(memory, where + ".memory");
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
  check_keys(
      node, "health",
      {"interval", "backoff", "backoff_max", "crash_loop", "crash_window", "metrics_interval"});
  if (node["interval"]) h.interval = duration(node["interval"], "health.interval");
  if (node["backoff"]) h.backoff = duration(node["backoff"], "health.backoff");
  if (node["backoff_max"]) h.backoff_max = duration(node["backoff_max"], "health.backoff_max");
  if (node["crash_loop"]) h.crash_loop = positive_int(node["crash_loop"], "health.crash_loop");
  if (node["crash_window"]) h.crash_window = duration(node["crash_window"], "health.crash_window");
  if (node["metrics_interval"])
    h.metrics_interval = duration(node["metrics_interval"], "health.metrics_interval");
  if (h.metrics_interval.count() == 0)
    fail(node["metrics_interval"], "health.metrics_interval: must be above 0");
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

std::int64_t positive_int64(const YAML::Node& node, const std::string& field) {
  const auto s = scalar(node, field);
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || value < 1)
    fail(node, fmt::format("{}: expected a positive integer, got '{}'", field, s));
  return value;
}

// The limit fields of one api_keys entry (the same names as the keys CLI's
// flags, with underscores).
tenancy::KeyLimits parse_key_limits(const YAML::Node& node, const std::string& where) {
  tenancy::KeyLimits l;
  if (node["models"]) l.models = string_list(node["models"], where + ".models");
  if (node["rpm"]) l.rpm = positive_int64(node["rpm"], where + ".rpm");
  if (node["tpm"]) l.tpm = positive_int64(node["tpm"], where + ".tpm");
  if (node["tokens_per_day"])
    l.tokens_per_day = positive_int64(node["tokens_per_day"], where + ".tokens_per_day");
  if (node["max_concurrency"])
    l.max_concurrency = positive_int(node["max_concurrency"], where + ".max_concurrency");
  if (node["max_sessions"])
    l.max_sessions = positive_int(node["max_sessions"], where + ".max_sessions");
  if (node["session_idle"]) {
    l.session_idle = duration(node["session_idle"], where + ".session_idle");
    if (l.session_idle.count() == 0)
      fail(node["session_idle"], where + ".session_idle: must be above 0");
  }
  if (node["priority"]) {
    const auto s = scalar(node["priority"], where + ".priority");
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), l.priority);
    if (ec != std::errc() || end != s.data() + s.size())
      fail(node["priority"], fmt::format("{}.priority: expected an integer, got '{}'", where, s));
  }
  if (node["weight"]) {
    const auto s = scalar(node["weight"], where + ".weight");
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), l.weight);
    if (ec != std::errc() || end != s.data() + s.size() || !(l.weight > 0) ||
        !std::isfinite(l.weight))
      fail(node["weight"], fmt::format("{}.weight: expected a number above 0, got '{}'", where, s));
  }
  return l;
}

// api_keys: a list of keys, each a plain string or a mapping with the key,
// an optional name and limits.
void parse_api_keys(const YAML::Node& node, FleetConfig& c) {
  if (!node.IsSequence())
    fail(node, fmt::format("api_keys: expected a list of keys, got {}", describe(node)));
  std::set<std::string> names;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const auto where = fmt::format("api_keys[{}]", i);
    const YAML::Node entry = node[i];
    tenancy::StaticKey k;
    k.name = where;
    if (entry.IsMap()) {
      check_keys(entry, where,
                 {"key", "name", "models", "rpm", "tpm", "tokens_per_day", "max_concurrency",
                  "max_sessions", "session_idle", "priority", "weight"});
      if (!entry["key"]) fail(entry, where + ".key: required (the secret clients send)");
      k.key = non_empty(entry["key"], where + ".key");
      if (entry["name"]) {
        k.name = non_empty(entry["name"], where + ".name");
        if (!tenancy::valid_key_name(k.name))
          fail(entry["name"], fmt::format("{}.name: '{}' is not a key name: {}", where, k.name,
                                          tenancy::key_name_rule));
      }
      k.limits = parse_key_limits(entry, where);
    } else {
      k.key = non_empty(entry, where);
    }
    if (!names.insert(k.name).second)
      fail(entry, fmt::format("{}.name: '{}' is used twice", where, k.name));
    c.api_keys.push_back(k.key);
    c.static_keys.push_back(std::move(k));
  }
}

// state_db, relative to the config file's directory.
void parse_state_db(const YAML::Node& root, FleetConfig& c) {
  std::filesystem::path db = "switchyard.db";
  if (const auto node = root["state_db"]) db = non_empty(node, "state_db");
  if (db.is_relative()) db = std::filesystem::path(c.source).parent_path() / db;
  c.state_db = db.lexically_normal().string();
}

// redis, redis_down, redis_lease_ttl: the shared limits.
void parse_redis(const YAML::Node& root, FleetConfig& c) {
  if (const auto node = root["redis"]) {
    auto address = tenancy::parse_redis_url(non_empty(node, "redis"));
    if (!address) fail(node, address.error().message);
    c.redis = std::move(*address);
  }
  if (const auto node = root["redis_down"]) {
    const auto mode = scalar(node, "redis_down");
    if (mode != "reject" && mode != "local")
      fail(node, fmt::format("redis_down: '{}' is not one of: reject, local", mode));
    c.redis_down = mode == "local" ? FleetConfig::RedisDown::local : FleetConfig::RedisDown::reject;
  }
  if (const auto node = root["redis_lease_ttl"]) {
    c.redis_lease_ttl = duration(node, "redis_lease_ttl");
    if (c.redis_lease_ttl < std::chrono::milliseconds(300))
      fail(node, "redis_lease_ttl: must be at least 300ms (leases are renewed every third of it)");
  }
  if (const auto node = root["redis_poll"]) {
    c.redis_poll = duration(node, "redis_poll");
    if (c.redis_poll < std::chrono::milliseconds(10))
      fail(node, "redis_poll: must be at least 10ms");
  }
  if (const auto node = root["redis_secret"]) c.redis_secret = non_empty(node, "redis_secret");
  if (!c.redis &&
      (root["redis_down"] || root["redis_lease_ttl"] || root["redis_poll"] || root["redis_secret"]))
    fail(root["redis_down"]        ? root["redis_down"]
         : root["redis_lease_ttl"] ? root["redis_lease_ttl"]
         : root["redis_poll"]      ? root["redis_poll"]
                                   : root["redis_secret"],
         "redis_down, redis_lease_ttl, redis_poll and redis_secret need redis: "
         "redis://host:port/db");
}

// profiles: {name: [instance, ...], ...}, in the file's order (the first is
// active at start).
void parse_profiles(const YAML::Node& node, std::vector<ProfileConfig>& profiles) {
  if (!node.IsMap() || node.size() == 0)
    fail(node, "profiles: expected a mapping of profile name to a list of instances");
  for (const auto& kv : node) {
    ProfileConfig p;
    p.name = non_empty(kv.first, "profiles");
    const auto where = "profiles." + p.name;
    p.instances = string_list(kv.second, where);
    if (p.instances.empty()) fail(kv.second, where + ": must name at least one instance");
    profiles.push_back(std::move(p));
  }
}

void parse_switching(const YAML::Node& node, SwitchingOptions& s) {
  if (!node.IsMap()) fail(node, "switching: expected a mapping");
  check_keys(node, "switching",
             {"mode", "drain_timeout", "on_drain_timeout", "min_dwell", "max_hold", "queue_depth",
              "sustain", "prefill_bound", "idle", "switch_cost", "estimates"});
  if (const auto mode = node["mode"]) {
    const auto m = scalar(mode, "switching.mode");
    if (m != "manual" && m != "on-demand")
      fail(mode, fmt::format("switching.mode: '{}' is not one of: manual, on-demand", m));
    s.mode = m == "manual" ? SwitchingOptions::Mode::manual : SwitchingOptions::Mode::on_demand;
  }
  if (const auto after = node["on_drain_timeout"]) {
    const auto a = scalar(after, "switching.on_drain_timeout");
    if (a != "wait" && a != "abort")
      fail(after, fmt::format("switching.on_drain_timeout: '{}' is not one of: wait, abort", a));
    s.abort_on_drain_timeout = a == "abort";
  }
  const std::pair<const char*, std::chrono::milliseconds*> durations[] = {
      {"drain_timeout", &s.drain_timeout}, {"min_dwell", &s.min_dwell},
      {"max_hold", &s.max_hold},           {"sustain", &s.sustain},
      {"prefill_bound", &s.prefill_bound}, {"idle", &s.idle},
      {"switch_cost", &s.switch_cost}};
  for (auto [name, target] : durations)
    if (node[name]) *target = duration(node[name], std::string("switching.") + name);
  if (s.max_hold.count() == 0)
    fail(node["max_hold"], "switching.max_hold: must be above 0 (held requests need time)");
  if (node["queue_depth"])
    s.queue_depth = positive_int(node["queue_depth"], "switching.queue_depth");
  if (const auto est = node["estimates"]) {
    if (!est.IsMap())
      fail(est, "switching.estimates: expected a mapping of instance name to seeds");
    for (const auto& kv : est) {
      const auto name = non_empty(kv.first, "switching.estimates");
      const auto where = "switching.estimates." + name;
      if (!kv.second.IsMap()) fail(kv.second, where + ": expected a mapping");
      check_keys(kv.second, where, {"decode_tps", "prefill_tps", "prefill_half_depth", "context"});
      InstanceEstimate e;
      if (kv.second["decode_tps"])
        e.decode_tps = positive_number(kv.second["decode_tps"], where + ".decode_tps");
      if (kv.second["prefill_tps"])
        e.prefill_tps = positive_number(kv.second["prefill_tps"], where + ".prefill_tps");
      if (kv.second["prefill_half_depth"])
        e.prefill_half_depth =
            positive_number(kv.second["prefill_half_depth"], where + ".prefill_half_depth");
      if (kv.second["context"]) e.context = positive_int(kv.second["context"], where + ".context");
      s.estimates[name] = e;
    }
  }
}

bool share_gpu(const InstanceConfig& a, const InstanceConfig& b) {
  for (const auto& g : a.gpu_ids())
    for (const auto& h : b.gpu_ids())
      if (g == h) return true;
  return false;
}

// prestart: an on-demand instance is loaded at start; otherwise only an
// engine the gateway starts, puts to sleep and that waits parked at start
// (in a profile, not the first) can be started early.
void validate_prestart(const YAML::Node& root, const FleetConfig& c) {
  std::set<std::string> first, parked;
  for (std::size_t p = 0; p < c.profiles.size(); ++p)
    for (const auto& name : c.profiles[p].instances) (p == 0 ? first : parked).insert(name);
  for (std::size_t i = 0; i < c.instances.size(); ++i) {
    const auto& inst = c.instances[i];
    if (!inst.prestart || inst.load == LoadMode::on_demand) continue;
    const auto node = root["instances"][i]["prestart"];
    const auto where = fmt::format("instances[{}].prestart", i);
    if (!inst.sleep || !inst.command)
      fail(node, where +
                     ": needs 'sleep: true' and a 'command' (the gateway starts the engine "
                     "and puts it to sleep)");
    if (!parked.count(inst.name) || first.count(inst.name))
      fail(node, fmt::format("{}: '{}' is not parked at start (it must be in a profile other "
                             "than the first, and not in the first)",
                             where, inst.name));
  }
}

// Profiles name known instances, each at most once; no two instances of a
// profile share a GPU, nor does an instance outside every profile (it always
// runs) share one with a profile's instance; the gateway can stop or sleep
// every profile instance.
void validate_profiles(const YAML::Node& root, const FleetConfig& c) {
  validate_prestart(root, c);
  const auto find = [&](const std::string& name) -> const InstanceConfig* {
    for (const auto& inst : c.instances)
      if (inst.name == name) return &inst;
    return nullptr;
  };
  std::set<std::string> in_profiles;
  for (const auto& p : c.profiles) {
    const auto node = root["profiles"][p.name];
    std::vector<const InstanceConfig*> members;
    for (const auto& name : p.instances) {
      const auto* inst = find(name);
      if (!inst)
        fail(node, fmt::format("profiles.{}: '{}' is not one of the instances", p.name, name));
      for (const auto* other : members) {
        if (other == inst)
          fail(node, fmt::format("profiles.{}: '{}' is listed twice", p.name, name));
        if (share_gpu(*other, *inst))
          fail(node, fmt::format("profiles.{}: '{}' and '{}' share a GPU ({} and {}); a "
                                 "profile's instances run at once",
                                 p.name, other->name, inst->name, other->gpus, inst->gpus));
      }
      if (!inst->command && !inst->sleep)
        fail(node, fmt::format("profiles.{}: '{}' has a url and no 'sleep: true': the gateway "
                               "could neither stop nor sleep it",
                               p.name, name));
      members.push_back(inst);
      in_profiles.insert(name);
    }
  }
  if (c.profiles.empty()) return;
  for (const auto& always : c.instances) {
    if (in_profiles.count(always.name)) continue;
    for (const auto& name : in_profiles) {
      if (share_gpu(always, *find(name)))
        fail(root["profiles"], fmt::format("profiles: '{}' is in no profile (it always runs) but "
                                           "shares a GPU with '{}' of a profile",
                                           always.name, name));
    }
  }
  for (const auto& [name, estimate] : c.switching.estimates)
    if (!find(name))
      fail(root["switching"]["estimates"],
           fmt::format("switching.estimates: '{}' is not one of the instances", name));
}

void parse_gpus(const YAML::Node& node, std::vector<GpuConfig>& gpus) {
  if (!node.IsSequence()) fail(node, "gpus: expected a list of {id, memory}");
  for (std::size_t g = 0; g < node.size(); ++g) {
    const auto where = fmt::format("gpus[{}]", g);
    const auto& entry = node[g];
    if (!entry.IsMap()) fail(entry, where + ": expected a mapping {id, memory}");
    check_keys(entry, where, {"id", "memory"});
    if (!entry["id"] || !entry["memory"]) fail(entry, where + ": needs both 'id' and 'memory'");
    GpuConfig gpu{non_empty(entry["id"], where + ".id"),
                  byte_size(entry["memory"], where + ".memory")};
    for (const auto& other : gpus)
      if (other.id == gpu.id)
        fail(entry["id"], fmt::format("{}.id: '{}' is listed twice", where, gpu.id));
    gpus.push_back(gpu);
  }
}

void parse_swapping(const YAML::Node& node, SwappingOptions& s) {
  if (!node.IsMap()) fail(node, "swapping: expected a mapping");
  check_keys(node, "swapping", {"policy", "max_wait", "min_resident", "progress"});
  if (const auto policy = node["policy"]) {
    const auto name = scalar(policy, "swapping.policy");
    if (name != "batch" && name != "fifo")
      fail(policy, fmt::format("swapping.policy: '{}' is not one of: batch, fifo", name));
    s.policy = name == "batch" ? SwappingOptions::Policy::batch : SwappingOptions::Policy::fifo;
  }
  if (const auto wait = node["max_wait"]) {
    s.max_wait = duration(wait, "swapping.max_wait");
    if (s.max_wait.count() == 0) fail(wait, "swapping.max_wait: must be above 0");
  }
  if (node["min_resident"])
    s.min_resident = duration(node["min_resident"], "swapping.min_resident");
  if (node["progress"]) s.progress = duration(node["progress"], "swapping.progress");
}

// load, ttl, gpus and memory (docs/models.md): an on-demand instance is one
// the gateway starts, outside profiles; its GPUs are the box's; its memory
// fits them.
void validate_residency(const YAML::Node& root, const FleetConfig& c) {
  std::set<std::string> in_profiles;
  for (const auto& p : c.profiles) in_profiles.insert(p.instances.begin(), p.instances.end());
  for (std::size_t i = 0; i < c.instances.size(); ++i) {
    const auto& inst = c.instances[i];
    const auto node = root["instances"][i];
    const auto where = fmt::format("instances[{}]", i);
    const bool on_demand = inst.load == LoadMode::on_demand;
    if (inst.ttl && !on_demand)
      fail(node["ttl"], where +
                            ".ttl: only for 'load: on-demand' (an always-on instance is "
                            "never unloaded)");
    if (on_demand && !inst.command)
      fail(node["load"], where +
                             ".load: on-demand needs a 'command' (the gateway cannot start "
                             "an engine at a url)");
    if (on_demand && in_profiles.count(inst.name))
      fail(node["load"], fmt::format("{}.load: '{}' is in a profile; profiles decide when their "
                                     "instances run (use always, the default)",
                                     where, inst.name));
    if (c.gpus.empty()) continue;
    for (const auto& id : inst.gpu_ids()) {
      const auto gpu = std::find_if(c.gpus.begin(), c.gpus.end(),
                                    [&](const GpuConfig& g) { return g.id == id; });
      if (gpu == c.gpus.end()) {
        std::string ids;
        for (const auto& g : c.gpus) ids += (ids.empty() ? "" : ", ") + g.id;
        fail(node["gpus"],
             fmt::format("{}.gpus: '{}' is not one of the gpus ({})", where, id, ids));
      }
      if (inst.memory && *inst.memory > gpu->memory)
        fail(node["memory"],
             fmt::format("{}.memory: {:.1f} GiB per GPU does not fit GPU {} ({:.1f} GiB)", where,
                         *inst.memory / 1073741824.0, id, gpu->memory / 1073741824.0));
    }
  }
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

// `routing: NAME` or `routing: {policy, balance_factor, route_header, home_wait}`.
void parse_routing(const YAML::Node& node, RoutingOptions& r) {
  if (!node.IsMap()) {
    r.policy = routing_policy(node, "routing");
    return;
  }
  check_keys(node, "routing", {"policy", "balance_factor", "route_header", "home_wait"});
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
  if (node["home_wait"]) r.home_wait = duration(node["home_wait"], "routing.home_wait");
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

TracingOptions parse_tracing(const YAML::Node& node) {
  if (!node.IsMap()) fail(node, "tracing: expected a mapping with 'endpoint'");
  check_keys(node, "tracing", {"endpoint", "sample", "service_name"});
  TracingOptions t;
  if (!node["endpoint"])
    fail(node, "tracing.endpoint: required (the OTLP/HTTP collector, e.g. http://127.0.0.1:4318)");
  t.endpoint = non_empty(node["endpoint"], "tracing.endpoint");
  if (auto url = http::parse_url(t.endpoint); !url)
    fail(node["endpoint"], "tracing.endpoint: " + url.error().message);
  if (const auto sample = node["sample"]) {
    const auto s = scalar(sample, "tracing.sample");
    double value = -1;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || end != s.data() + s.size() || !(value >= 0 && value <= 1))
      fail(sample, fmt::format("tracing.sample: expected a number from 0 to 1, got '{}'", s));
    t.sample = value;
  }
  if (node["service_name"])
    t.service_name = non_empty(node["service_name"], "tracing.service_name");
  return t;
}

LogOptions parse_log(const YAML::Node& node) {
  if (!node.IsMap()) fail(node, "log: expected a mapping with 'format'");
  check_keys(node, "log", {"format"});
  LogOptions l;
  if (const auto format = node["format"]) {
    const auto f = scalar(format, "log.format");
    if (f != "text" && f != "json")
      fail(format, fmt::format("log.format: '{}' is not one of: text, json", f));
    l.format = f == "json" ? LogOptions::Format::json : LogOptions::Format::text;
  }
  return l;
}

}  // namespace

std::vector<std::string> InstanceConfig::gpu_ids() const {
  std::vector<std::string> out;
  std::stringstream in(gpus);
  for (std::string g; std::getline(in, g, ',');)
    if (!g.empty()) out.push_back(g);
  return out;
}

std::optional<MemoryFigure> instance_memory(const FleetConfig& config, std::size_t i) {
  const auto& inst = config.instances.at(i);
  if (inst.memory) return MemoryFigure{*inst.memory, fmt::format("instances[{}].memory", i)};
  if (auto it = config.memory_estimates.find(inst.name); it != config.memory_estimates.end())
    return it->second;
  return std::nullopt;
}

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
    check_keys(
        root, "",
        {"listen",     "models",          "instances",  "api_keys",     "admin_key",     "routing",
         "body_limit", "max_connections", "attempts",   "retry_budget", "health_detail", "timeouts",
         "health",     "queue",           "state_db",   "profiles",     "switching",     "redis",
         "redis_down", "redis_lease_ttl", "redis_poll", "redis_secret", "admin_hosts",   "gpus",
         "swapping",   "tracing",         "log"});
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
    if (const auto keys = root["api_keys"]) parse_api_keys(keys, c);
    parse_state_db(root, c);
    if (const auto admin = root["admin_key"]) c.admin_key = non_empty(admin, "admin_key");
    if (const auto hosts = root["admin_hosts"]) c.admin_hosts = string_list(hosts, "admin_hosts");
    parse_redis(root, c);
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
    if (const auto profiles = root["profiles"]) parse_profiles(profiles, c.profiles);
    if (const auto switching = root["switching"]) parse_switching(switching, c.switching);
    if (const auto gpus = root["gpus"]) parse_gpus(gpus, c.gpus);
    if (const auto swapping = root["swapping"]) parse_swapping(swapping, c.swapping);
    if (const auto tracing = root["tracing"]) c.tracing = parse_tracing(tracing);
    if (const auto log = root["log"]) c.log = parse_log(log);
    validate(root, c);
    validate_profiles(root, c);
    validate_residency(root, c);
  } catch (const ConfigError& e) {
    return Error{e.line > 0 ? fmt::format("{}:{}: {}", source, e.line, e.message)
                            : fmt::format("{}: {}", source, e.message)};
  } catch (const YAML::Exception& e) {
    return Error{fmt::format("{}:{}: {}", source, e.mark.line + 1, e.msg)};
  }
  return c;
}

namespace {

// Every setting a reload cannot change, by its config name: `visit(name,
// from, to)` on each pair of members, so that reporting the changed ones
// and keeping the running ones walk the one list.
template <class From, class To, class Visit>
void each_restart_only(From& from, To& to, Visit visit) {
  visit("listen", from.listen, to.listen);
  visit("body_limit", from.body_limit, to.body_limit);
  visit("max_connections", from.max_connections, to.max_connections);
  visit("routing", from.routing, to.routing);
  visit("timeouts.connect", from.timeouts.connect, to.timeouts.connect);
  visit("timeouts.first_byte", from.timeouts.first_byte, to.timeouts.first_byte);
  visit("timeouts.stream_idle", from.timeouts.stream_idle, to.timeouts.stream_idle);
  visit("timeouts.client_header", from.timeouts.client_header, to.timeouts.client_header);
  visit("timeouts.client_body", from.timeouts.client_body, to.timeouts.client_body);
  visit("timeouts.startup", from.timeouts.startup, to.timeouts.startup);
  visit("timeouts.drain", from.timeouts.drain, to.timeouts.drain);
  visit("timeouts.stop", from.timeouts.stop, to.timeouts.stop);
  visit("health.interval", from.health.interval, to.health.interval);
  visit("health.backoff", from.health.backoff, to.health.backoff);
  visit("health.backoff_max", from.health.backoff_max, to.health.backoff_max);
  visit("health.crash_loop", from.health.crash_loop, to.health.crash_loop);
  visit("health.crash_window", from.health.crash_window, to.health.crash_window);
  visit("health.metrics_interval", from.health.metrics_interval, to.health.metrics_interval);
  visit("queue.max_length", from.queue.max_length, to.queue.max_length);
  visit("queue.max_wait", from.queue.max_wait, to.queue.max_wait);
  visit("state_db", from.state_db, to.state_db);
  visit("redis", from.redis, to.redis);
  visit("redis_down", from.redis_down, to.redis_down);
  visit("redis_lease_ttl", from.redis_lease_ttl, to.redis_lease_ttl);
  visit("redis_poll", from.redis_poll, to.redis_poll);
  visit("redis_secret", from.redis_secret, to.redis_secret);
  visit("admin_hosts", from.admin_hosts, to.admin_hosts);
  visit("profiles", from.profiles, to.profiles);
  visit("switching", from.switching, to.switching);
  visit("tracing", from.tracing, to.tracing);
  visit("log", from.log, to.log);
}

}  // namespace

std::vector<std::string> restart_only_changes(const FleetConfig& running, const FleetConfig& next) {
  std::vector<std::string> changed;
  each_restart_only(running, next, [&](const char* name, const auto& a, const auto& b) {
    if (a != b) changed.emplace_back(name);
  });
  return changed;
}

FleetConfig keep_restart_only_settings(const FleetConfig& running, FleetConfig next) {
  each_restart_only(running, next,
                    [](const char*, const auto& kept, auto& applied) { applied = kept; });
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

}  // namespace switchyard::config
