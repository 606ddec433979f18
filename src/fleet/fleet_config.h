// The fleet configuration (fleet.yaml): what the gateway serves and how.
// Loaded and validated once; errors name the file, line and field.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace switchyard::fleet {

struct ModelConfig {
  std::string name;                  // the model's canonical name, as clients may ask for it
  std::vector<std::string> aliases;  // other names clients may use
};

struct InstanceConfig {
  std::string name;   // unique; appears in logs, metrics and /health
  std::string model;  // a ModelConfig name
  // Exactly one of url (an engine someone else runs) and command (an engine
  // the gateway starts and stops).
  std::optional<std::string> url;
  // ${PORT} ${GPUS} ${SWITCHYARD} substituted; exec'd directly when it has
  // no shell syntax (split_plain_command), else run by /bin/sh -c.
  std::optional<std::string> command;
  std::map<std::string, std::string> env;  // added to the command's environment
  std::string gpus;                        // value of ${GPUS}, e.g. "0" or "0,1"
  // Requests the engine runs at once (llama-server -np, vLLM --max-num-seqs).
  // Unset: read from the engine's /props total_slots, else 1.
  std::optional<int> slots;
  // Sent upstream as "Authorization: Bearer <key>".
  std::optional<std::string> api_key;
  // Name the engine itself serves the model under, when it differs from the
  // model name (the gateway rewrites the request's model to it).
  std::optional<std::string> served_model;

  bool operator==(const InstanceConfig&) const = default;
};

// Every one must be above 0 but drain and stop (0: do not wait).
struct Timeouts {
  std::chrono::milliseconds connect{5000};         // TCP connect to an engine
  std::chrono::milliseconds first_byte{600000};    // request sent → response headers
  std::chrono::milliseconds stream_idle{120000};   // silence between two chunks
  std::chrono::milliseconds client_header{60000};  // client idle / slow headers
  std::chrono::milliseconds client_body{60000};    // reading a request body
  std::chrono::milliseconds startup{600000};       // supervised engine until /health 200
  std::chrono::milliseconds drain{30000};          // SIGTERM: in-flight requests may finish
  std::chrono::milliseconds stop{10000};           // SIGTERM → SIGKILL for engines

  bool operator==(const Timeouts&) const = default;
};

// How instances are watched, ejected and restarted.
struct HealthOptions {
  // Active /health probe of each ready instance. Passive marks (connect
  // errors, resets, stalls seen by requests) eject at once, between probes.
  std::chrono::milliseconds interval{5000};
  // First wait before re-probing an ejected instance or restarting an engine
  // that exited; doubles on each failure up to backoff_max.
  std::chrono::milliseconds backoff{1000};
  std::chrono::milliseconds backoff_max{30000};
  // An engine that exits this many times, each within crash_window of the
  // previous exit, is reported as crash-looping (still retried at backoff_max).
  int crash_loop = 5;
  std::chrono::milliseconds crash_window{std::chrono::minutes(5)};

  bool operator==(const HealthOptions&) const = default;
};

// The gateway's per-model wait line for when every slot is busy.
struct QueueOptions {
  // Requests waiting per model; one more gets 429. Memory per waiter is its
  // request body, so keep this bounded.
  int max_length = 256;
  // Longest wait for a slot; then 429 with Retry-After.
  std::chrono::milliseconds max_wait{60000};

  bool operator==(const QueueOptions&) const = default;
};

enum class RoutingPolicy { least_outstanding, round_robin, prefix_affinity, session };

// `routing:` in the config: a policy name alone, or a map of these fields
// (docs/routing.md).
struct RoutingOptions {
  // Which instance gets a request among those with a free slot.
  RoutingPolicy policy = RoutingPolicy::least_outstanding;
  // prefix-affinity and session: an instance whose load would exceed this
  // many times the mean (per slot, rounded up) loses its affinity for the
  // request (consistent hashing with bounded loads). Lower spreads load
  // more evenly at the cost of cache hits; at least 1.
  double balance_factor = 1.25;
  // Whether answers say where they were routed (X-Switchyard-Route).
  bool route_header = true;

  bool operator==(const RoutingOptions&) const = default;
};

struct FleetConfig {
  std::string source;  // file name, for messages
  std::string listen = "127.0.0.1:8080";
  std::vector<ModelConfig> models;
  std::vector<InstanceConfig> instances;
  std::vector<std::string> api_keys;  // empty: no authentication
  // The admin routes' key (gateway/admin_access.h); empty: loopback clients only.
  std::string admin_key;
  RoutingOptions routing;
  std::uint64_t body_limit = 32ull << 20;
  // Open client connections at most (http::ServerOptions::max_connections).
  // Unset: default_max_connections() of the descriptor limit.
  std::optional<std::size_t> max_connections;
  // Attempts per request before the first response byte: a connect error,
  // reset, timeout or 502/503/504 moves the request to another instance.
  int attempts = 3;
  // Time from a request's arrival after which no further attempt starts,
  // however many `attempts` are left: a failing fleet answers 502 in bounded
  // time instead of walking every instance at its timeouts.
  std::chrono::milliseconds retry_budget{30000};
  // /health with API keys configured: without a key it says only whether the
  // gateway is serving; instance detail (names, states, engine URLs) needs a
  // key unless this is set (health_detail: public). Without keys: always public.
  bool health_detail_public = false;
  Timeouts timeouts;
  HealthOptions health;
  QueueOptions queue;
};

// The settings that differ between `running` and `next` but take effect only
// on a restart, by their config names ("listen", "timeouts.connect", ...).
// A reload applies none of them (keep_restart_only_settings), so none is
// ever applied halfway: the pools, supervisors and server keep the values
// they started with.
std::vector<std::string> restart_only_changes(const FleetConfig& running, const FleetConfig& next);
// `next` with every restart-only setting taken from `running`: what a reload
// should apply.
FleetConfig keep_restart_only_settings(const FleetConfig& running, FleetConfig next);

// The connection cap when the config sets none, from the descriptor limit
// (RLIMIT_NOFILE): each client connection may hold an upstream connection,
// so (fd_limit - reserve) / 2, where the reserve is 64 (logs, the event loop,
// config and /proc reads) plus, per instance, its idle pool (max(32, slots))
// and 2 (the engine's output pipe and the health probe). At least 16.
std::size_t default_max_connections(std::uint64_t fd_limit, const FleetConfig& config);

// `url` with any user:password@ replaced by "***@", for logs and messages.
std::string redact_url(std::string_view url);

Result<FleetConfig> load_fleet_config(const std::string& path);
// `source` names the text in error messages.
Result<FleetConfig> parse_fleet_config(std::string_view yaml, const std::string& source);

// "5s", "250ms", "2m", "1h" or a bare number of seconds.
Result<std::chrono::milliseconds> parse_duration(std::string_view text);
// "32MiB", "1GB", "512k" or a bare number of bytes.
Result<std::uint64_t> parse_size(std::string_view text);

}  // namespace switchyard::fleet
