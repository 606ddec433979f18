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
  std::optional<std::string> command;  // run by /bin/sh; ${PORT} ${GPUS} ${SWITCHYARD} substituted
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

struct Timeouts {
  std::chrono::milliseconds connect{5000};         // TCP connect to an engine
  std::chrono::milliseconds first_byte{600000};    // request sent → response headers
  std::chrono::milliseconds stream_idle{120000};   // silence between two chunks
  std::chrono::milliseconds client_header{60000};  // client idle / slow headers
  std::chrono::milliseconds client_body{60000};    // reading a request body
  std::chrono::milliseconds startup{600000};       // supervised engine until /health 200
  std::chrono::milliseconds drain{30000};          // SIGTERM: in-flight requests may finish
  std::chrono::milliseconds stop{10000};           // SIGTERM → SIGKILL for engines
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
};

// The gateway's per-model wait line for when every slot is busy.
struct QueueOptions {
  // Requests waiting per model; one more gets 429. Memory per waiter is its
  // request body, so keep this bounded.
  int max_length = 256;
  // Longest wait for a slot; then 429 with Retry-After.
  std::chrono::milliseconds max_wait{60000};
};

enum class RoutingPolicy { least_outstanding, round_robin };

struct FleetConfig {
  std::string source;  // file name, for messages
  std::string listen = "127.0.0.1:8080";
  std::vector<ModelConfig> models;
  std::vector<InstanceConfig> instances;
  std::vector<std::string> api_keys;  // empty: no authentication
  RoutingPolicy policy = RoutingPolicy::least_outstanding;
  std::uint64_t body_limit = 32ull << 20;
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

Result<FleetConfig> load_fleet_config(const std::string& path);
// `source` names the text in error messages.
Result<FleetConfig> parse_fleet_config(std::string_view yaml, const std::string& source);

// "5s", "250ms", "2m", "1h" or a bare number of seconds.
Result<std::chrono::milliseconds> parse_duration(std::string_view text);
// "32MiB", "1GB", "512k" or a bare number of bytes.
Result<std::uint64_t> parse_size(std::string_view text);

}  // namespace switchyard::fleet
