// `switchyard keys`: create, list, change and revoke the API keys of a
// fleet's state database (tenancy::KeyStore). A running gateway sees every
// change within a second (it polls the store's version). With `redis:` the
// records are written to Redis too and published, so every gateway on it
// sees the change within a second whatever its state_db (docs/keys.md).
#include <CLI/CLI.hpp>

#include <chrono>
#include <ctime>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "cli/command.h"
#include "common/command_error.h"
#include "config/fleet_config.h"
#include "tenancy/key_records.h"
#include "tenancy/key_store.h"
#include "tenancy/redis_blocking.h"

namespace switchyard::cli {

namespace {

// The limit flags of create and set; unset ones leave a limit as it is (set)
// or absent (create). 0 removes a limit.
struct LimitFlags {
  std::optional<std::string> models;
  std::optional<std::int64_t> rpm, tpm, tokens_per_day;
  std::optional<int> max_concurrency, max_sessions, priority;
  std::optional<std::string> session_idle;
  std::optional<double> weight;
};

struct KeysFlags {
  std::string config_path;
  std::string name;
  LimitFlags limits;
};

void add_limit_flags(CLI::App* sub, LimitFlags& f) {
  sub->add_option("--models", f.models, "Models the key may use, comma-separated (\"\": all)");
  sub->add_option("--rpm", f.rpm, "Requests per minute (0: no limit)");
  sub->add_option("--tpm", f.tpm, "Tokens (prompt + completion) per minute (0: no limit)");
  sub->add_option("--tokens-per-day", f.tokens_per_day, "Tokens per UTC day (0: no limit)");
  sub->add_option("--max-concurrency", f.max_concurrency,
                  "Requests in flight at once; the excess waits (0: no limit)");
  sub->add_option("--max-sessions", f.max_sessions,
                  "Agent sessions active at once; new ones wait for a seat (0: no limit)");
  sub->add_option("--session-idle", f.session_idle,
                  "How long after its last request a session keeps its seat (default 5m)");
  sub->add_option("--priority", f.priority, "Queue priority band; higher first (default 0)");
  sub->add_option("--weight", f.weight, "Share of the slots within its band (default 1)");
}

// `l` with the given flags applied; an error names the flag.
Result<tenancy::KeyLimits> apply(const LimitFlags& f, tenancy::KeyLimits l) {
  const auto count = [](const std::optional<std::int64_t>& v) {
    return v && *v > 0 ? v : std::nullopt;
  };
  const auto small = [](const std::optional<int>& v) { return v && *v > 0 ? v : std::nullopt; };
  for (auto [flag, v] :
       {std::pair{"--rpm", f.rpm}, {"--tpm", f.tpm}, {"--tokens-per-day", f.tokens_per_day}})
    if (v && *v < 0) return Error{fmt::format("{}: must be 0 or more, got {}", flag, *v)};
  for (auto [flag, v] :
       {std::pair{"--max-concurrency", f.max_concurrency}, {"--max-sessions", f.max_sessions}})
    if (v && *v < 0) return Error{fmt::format("{}: must be 0 or more, got {}", flag, *v)};
  if (f.models) {
    l.models.clear();
    std::string_view rest = *f.models;
    while (!rest.empty()) {
      const auto comma = std::min(rest.find(','), rest.size());
      if (comma > 0) l.models.emplace_back(rest.substr(0, comma));
      rest.remove_prefix(std::min(comma + 1, rest.size()));
    }
  }
  if (f.rpm) l.rpm = count(f.rpm);
  if (f.tpm) l.tpm = count(f.tpm);
  if (f.tokens_per_day) l.tokens_per_day = count(f.tokens_per_day);
  if (f.max_concurrency) l.max_concurrency = small(f.max_concurrency);
  if (f.max_sessions) l.max_sessions = small(f.max_sessions);
  if (f.session_idle) {
    auto d = config::parse_duration(*f.session_idle);
    if (!d) return Error{"--session-idle: " + d.error().message};
    if (d->count() == 0) return Error{"--session-idle: must be above 0"};
    l.session_idle = *d;
  }
  if (f.priority) l.priority = *f.priority;
  if (f.weight) {
    if (!(*f.weight > 0)) return Error{fmt::format("--weight: must be above 0, got {}", *f.weight)};
    l.weight = *f.weight;
  }
  return l;
}

std::string limits_text(const tenancy::KeyLimits& l) {
  std::string out;
  const auto add = [&](std::string item) { out += (out.empty() ? "" : " ") + item; };
  if (!l.models.empty()) {
    std::string models;
    for (const auto& m : l.models) models += (models.empty() ? "" : ",") + m;
    add("models=" + models);
  }
  if (l.rpm) add(fmt::format("rpm={}", *l.rpm));
  if (l.tpm) add(fmt::format("tpm={}", *l.tpm));
  if (l.tokens_per_day) add(fmt::format("tokens_per_day={}", *l.tokens_per_day));
  if (l.max_concurrency) add(fmt::format("max_concurrency={}", *l.max_concurrency));
  if (l.max_sessions)
    add(fmt::format("max_sessions={} session_idle={}s", *l.max_sessions,
                    std::chrono::duration_cast<std::chrono::seconds>(l.session_idle).count()));
  if (l.priority != 0) add(fmt::format("priority={}", l.priority));
  if (l.weight != 1) add(fmt::format("weight={:g}", l.weight));
  return out.empty() ? "-" : out;
}

std::string time_text(std::optional<std::int64_t> seconds) {
  if (!seconds) return "-";
  const std::time_t t = *seconds;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

enum class Verb { create, list, set, revoke };

// The key records in Redis when `redis:` is set: read before a change (a
// newer copy there is taken into state_db first, so the change builds on
// it), written after it. Unreachable: the change is made in state_db only,
// which a gateway using that file publishes when it sees it.
class RedisRecords {
 public:
  explicit RedisRecords(const config::FleetConfig& config) : secret_(config.redis_secret) {
    if (!config.redis) return;
    address_ = fmt::format("{}:{}", config.redis->host, config.redis->port);
    auto redis = tenancy::BlockingRedis::connect(*config.redis, std::chrono::seconds(1));
    if (!redis) {
      warn(redis.error().message);
      return;
    }
    redis_.emplace(std::move(*redis));
  }

  // Every record in Redis (none when it is not used or not reachable).
  std::vector<tenancy::KeyRecord> all() {
    std::vector<tenancy::KeyRecord> out;
    if (!redis_) return out;
    auto reply = redis_->command({"HGETALL", std::string(tenancy::key_records::records)});
    if (!reply || reply->is_error()) {
      warn(reply ? reply->str : reply.error().message);
      return out;
    }
    for (std::size_t i = 0; i + 1 < reply->elements.size(); i += 2)
      if (auto r =
              tenancy::decode_record(reply->elements[i].str, reply->elements[i + 1].str, secret_))
        out.push_back(std::move(*r));
    return out;
  }
  // Redis's copy of `name` into `store` when it is newer than the store's.
  void pull(tenancy::KeyStore& store, const std::string& name) {
    if (!redis_) return;
    auto reply = redis_->command({"HGET", std::string(tenancy::key_records::records), name});
    if (!reply || reply->is_error()) {
      warn(reply ? reply->str : reply.error().message);
      return;
    }
    if (reply->type != tenancy::RedisReply::Type::string) return;
    auto record = tenancy::decode_record(name, reply->str, secret_);
    if (!record) {
      warn(fmt::format("its record of '{}' is unreadable: {}", name, record.error().message));
      return;
    }
    if (auto put = store.put(*record); !put) warn(put.error().message);
  }
  // The store's record of `name` written to Redis and published.
  void push(tenancy::KeyStore& store, const std::string& name) {
    if (!redis_) return;
    auto record = store.find(name);
    if (!record) return warn(record.error().message);
    auto reply = redis_->command(tenancy::put_record_command(*record, secret_));
    if (!reply || reply->is_error()) return warn(reply ? reply->str : reply.error().message);
    if (reply->integer != 1)
      return warn(fmt::format("it holds a newer version of '{}' (changed meanwhile)", name));
    std::cerr << fmt::format("published to redis at {}: every gateway on it applies it\n",
                             address_);
  }

 private:
  void warn(const std::string& why) {
    if (warned_) return;
    warned_ = true;
    redis_.reset();
    std::cerr << fmt::format(
        "switchyard keys: redis at {}: {}; state_db only (a gateway using this state_db "
        "publishes it to redis)\n",
        address_, why);
  }
  std::string secret_;  // redis_secret: records signed and checked
  std::optional<tenancy::BlockingRedis> redis_;
  std::string address_;
  bool warned_ = false;
};

int run_keys(const KeysFlags& flags, Verb verb) {
  auto config = config::load_fleet_config(flags.config_path);
  if (!config) return command_error("keys", config.error().message);
  auto store = tenancy::KeyStore::open(config->state_db);
  if (!store) return command_error("keys", store.error().message);
  RedisRecords redis(*config);
  if (verb != Verb::list) redis.pull(*store, flags.name);
  switch (verb) {
    case Verb::create: {
      for (const auto& k : config->static_keys)
        if (k.name == flags.name)
          return command_error("keys", fmt::format("'{}' names a key of api_keys in {}", flags.name,
                                                   config->source));
      auto limits = apply(flags.limits, {});
      if (!limits) return command_error("keys", limits.error().message);
      auto key = store->create(flags.name, *limits, unix_now());
      if (!key) return command_error("keys", key.error().message);
      std::cout << *key << "\n";
      std::cerr << fmt::format(
          "key '{}' created ({}); this is the only time it is shown: store it now\n", flags.name,
          limits_text(*limits));
      redis.push(*store, flags.name);
      return 0;
    }
    case Verb::list: {
      auto local = store->list();
      if (!local) return command_error("keys", local.error().message);
      const auto keys = tenancy::merge_records(*local, redis.all());
      std::cout << fmt::format("{:<20} {:<12} {:<21} {:<21} {:<8} {}\n", "NAME", "PREFIX",
                               "CREATED", "LAST USED", "STATUS", "LIMITS");
      for (const auto& k : keys)
        std::cout << fmt::format("{:<20} {:<12} {:<21} {:<21} {:<8} {}\n", k.name, k.prefix + "…",
                                 time_text(k.created), time_text(k.last_used),
                                 k.revoked ? "revoked" : "active", limits_text(k.limits));
      return 0;
    }
    case Verb::set: {
      auto record = store->find(flags.name);
      if (!record) return command_error("keys", record.error().message);
      if (record->revoked)
        return command_error("keys", fmt::format("the key '{}' is revoked", flags.name));
      auto limits = apply(flags.limits, record->limits);
      if (!limits) return command_error("keys", limits.error().message);
      if (auto ok = store->update(flags.name, *limits); !ok)
        return command_error("keys", ok.error().message);
      std::cerr << fmt::format("key '{}': {}\n", flags.name, limits_text(*limits));
      redis.push(*store, flags.name);
      return 0;
    }
    case Verb::revoke: {
      if (auto ok = store->revoke(flags.name, unix_now()); !ok)
        return command_error("keys", ok.error().message);
      std::cerr << fmt::format("key '{}' revoked\n", flags.name);
      redis.push(*store, flags.name);
      return 0;
    }
  }
  return 2;
}

}  // namespace

Command add_keys_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "keys", "Create, list, change and revoke API keys (the fleet's state_db; docs/keys.md)");
  sub->require_subcommand(1);
  auto flags = std::make_shared<KeysFlags>();
  sub->add_option("-c,--config", flags->config_path, "Fleet configuration (YAML)")->required();
  auto verb = std::make_shared<Verb>(Verb::list);

  CLI::App* create = sub->add_subcommand("create", "A new key; prints it once");
  create->add_option("name", flags->name, "The key's name (what logs and metrics say)")->required();
  add_limit_flags(create, flags->limits);
  create->callback([verb] { *verb = Verb::create; });

  CLI::App* list = sub->add_subcommand("list", "Every key: name, prefix, dates, limits");
  list->callback([verb] { *verb = Verb::list; });

  CLI::App* set = sub->add_subcommand("set", "Change a key's limits");
  set->add_option("name", flags->name, "The key's name")->required();
  add_limit_flags(set, flags->limits);
  set->callback([verb] { *verb = Verb::set; });

  CLI::App* revoke = sub->add_subcommand("revoke", "Refuse a key from now on");
  revoke->add_option("name", flags->name, "The key's name")->required();
  revoke->callback([verb] { *verb = Verb::revoke; });

  return Command{sub, [flags, verb] { return run_keys(*flags, *verb); }};
}

}  // namespace switchyard::cli
