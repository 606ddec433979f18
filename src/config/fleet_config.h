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
#include "tenancy/key_limits.h"
#include "tenancy/redis_url.h"

namespace switchyard::config {

struct ModelConfig {
  std::string name;                  // the model's canonical name, as clients may ask for it
  std::vector<std::string> aliases;  // other names clients may use
};

// When the gateway runs an instance's engine (docs/models.md).
enum class LoadMode {
  always,     // from start to shutdown (or as its profile says)
  on_demand,  // started when a request needs its model; unloaded to make room, or after ttl
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
  // vLLM sleep mode: when its profile is switched off the gateway puts it to
  // sleep (POST /sleep?level=1, GPU memory freed, process kept) instead of
  // stopping it, and wakes it (POST /wake_up) instead of restarting it.
  bool sleep = false;
  // With sleep, in a profile other than the first: started at gateway start
  // and put to sleep before the first profile's instances start, so its
  // first switch wakes it (seconds) rather than loading it cold. The
  // gateway's start takes that much longer. With load: on-demand: loaded at
  // start (where it fits) rather than on its first request. Default false.
  bool prestart = false;
  LoadMode load = LoadMode::always;
  // on-demand: unloaded after this long with nothing in flight or queued.
  std::optional<std::chrono::milliseconds> ttl;
  // Bytes it needs on each of its GPUs; unset: plan's estimate, if any.
  std::optional<std::uint64_t> memory;

  // Its GPU ids, from `gpus` ("0,1" → {"0", "1"}).
  std::vector<std::string> gpu_ids() const;
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
  // How often each ready instance's /metrics is scraped, re-exported on the
  // gateway's /metrics and checked by the advisor. Shorter sees trouble
  // sooner at the cost of a request per instance per interval.
  std::chrono::milliseconds metrics_interval{5000};

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
  // prefix-affinity and session: how long a request whose home (the
  // instance holding its prompt) is busy or at the bound may wait for it
  // instead of spilling to an instance holding none of it; it waits only
  // when the prefill it would redo there is estimated to take longer. Longer
  // saves more prefills at the cost of queueing behind the home; 0 never
  // waits. Default 5 s.
  std::chrono::milliseconds home_wait{5000};

  bool operator==(const RoutingOptions&) const = default;
};

// A named set of instances that run together (docs/profiles.md). Instances
// in no profile always run; of the others only the active profile's do.
struct ProfileConfig {
  std::string name;
  std::vector<std::string> instances;  // instance names, each known

  bool operator==(const ProfileConfig&) const = default;
};

// What the on-demand policy assumes of an instance before it has measured it.
struct InstanceEstimate {
  double decode_tps = 0;   // tokens/s of one sequence; 0: unknown (the policy then skips it)
  double prefill_tps = 0;  // prompt tokens/s of one request, at depth 0
  // Depth at which prefill runs at half speed (0: no slowdown), as the sim's
  // --prefill-half-depth: D tokens take (D + D^2 / 2h) / prefill_tps seconds.
  double prefill_half_depth = 0;
  int context = 0;  // tokens one request may hold (context per slot); 0: unbounded

  bool operator==(const InstanceEstimate&) const = default;
};

// How and when the active profile changes (the `switching:` section).
struct SwitchingOptions {
  // manual: only POST /admin/profile switches. on_demand: the policy
  // (profiles/switch_policy.h) also switches when it pays.
  enum class Mode { manual, on_demand } mode = Mode::manual;
  // In-flight requests of the old profile get this long to finish ...
  std::chrono::milliseconds drain_timeout{60000};
  // ... then the switch waits on (false, the default: nothing is cut) or
  // stops the old engines anyway, which ends their streams with an error
  // event (true: on_drain_timeout: abort).
  bool abort_on_drain_timeout = false;
  // No switch sooner than this after the last one (either way).
  std::chrono::milliseconds min_dwell{std::chrono::minutes(5)};
  // Requests of a model whose profile is switching wait this long at most
  // (instead of queue.max_wait, which the switch would eat up).
  std::chrono::milliseconds max_hold{std::chrono::minutes(5)};
  // Trigger: this many requests of a model queued ...
  int queue_depth = 8;
  // ... for this long.
  std::chrono::milliseconds sustain{10000};
  // Trigger: a prompt whose predicted prefill on the active profile is longer.
  std::chrono::milliseconds prefill_bound{120000};
  // Back to the first profile once another one has had nothing to do this long.
  std::chrono::milliseconds idle{std::chrono::minutes(2)};
  // A switch's cost until one has been measured.
  std::chrono::milliseconds switch_cost{30000};
  // Per instance name: the policy's throughput seeds.
  std::map<std::string, InstanceEstimate> estimates;

  bool operator==(const SwitchingOptions&) const = default;
};

// One card of the box (`gpus:`), for the memory accounting of on-demand
// models.
struct GpuConfig {
  std::string id;  // as instances name it in their `gpus`
  std::uint64_t memory = 0;

  bool operator==(const GpuConfig&) const = default;
};

// How on-demand models take turns on the cards (`swapping:`, docs/models.md).
struct SwappingOptions {
  // batch: a loaded model's queued requests are served before a swap away
  // from it; fifo: the oldest waiter's model is loaded next (llama-swap's
  // order, kept for comparison).
  enum class Policy { batch, fifo } policy = Policy::batch;
  // No request waits longer than this behind other models' work: its model
  // is loaded next once it has waited max_wait minus the load's time; past
  // it, 503 with Retry-After.
  std::chrono::milliseconds max_wait{std::chrono::minutes(2)};
  // A loaded model with work stays at least this long (no flapping).
  std::chrono::milliseconds min_resident{std::chrono::seconds(30)};
  // A streamed request held for a load gets an SSE comment line this often
  // (`: loading coder 12 s`), so clients and proxies do not time out; 0: none.
  std::chrono::milliseconds progress{std::chrono::seconds(5)};

  bool operator==(const SwappingOptions&) const = default;
};

// What an instance needs per GPU, and where the figure came from.
struct MemoryFigure {
  std::uint64_t per_gpu = 0;  // bytes on each of its GPUs
  std::string source;         // "instances[2].memory", "plan: weights ... + KV ..."

  bool operator==(const MemoryFigure&) const = default;
};
// By instance name.
using MemoryEstimates = std::map<std::string, MemoryFigure>;

// tracing: OpenTelemetry traces over OTLP/HTTP (docs/tracing.md).
struct TracingOptions {
  // The collector, http://host:4318: spans go to <endpoint>/v1/traces (an
  // endpoint already ending in /v1/traces is used as it is).
  std::string endpoint;
  // The share of new traces recorded, 0 to 1; a client's traceparent
  // decides for the trace it continues.
  double sample = 1.0;
  std::string service_name = "switchyard";

  bool operator==(const TracingOptions&) const = default;
};

// log: how the log is written.
struct LogOptions {
  // json: one JSON object per line (access lines with their fields and
  // trace_id); text: lines for people.
  enum class Format { text, json } format = Format::text;

  bool operator==(const LogOptions&) const = default;
};

struct FleetConfig {
  std::string source;  // file name, for messages
  std::string listen = "127.0.0.1:8080";
  std::vector<ModelConfig> models;
  std::vector<InstanceConfig> instances;
  std::vector<std::string> api_keys;            // the static keys' secrets; empty: none
  std::vector<tenancy::StaticKey> static_keys;  // the same keys with their names and limits
  // SQLite file with the keys `switchyard keys` manages and the usage ledger.
  // Default: switchyard.db beside the config file; a relative path is taken
  // from the config file's directory. Authentication is on when api_keys
  // lists a key or the database has ever held one.
  std::string state_db;
  // The admin routes' key (gateway/admin_access.h); empty: loopback clients only.
  std::string admin_key;
  // Host names the admin routes and /ui answer besides the listen address,
  // localhost and the loopback addresses (a guard against DNS rebinding).
  std::vector<std::string> admin_hosts;
  // Shared limits (docs/keys.md, "Several gateways"): every gateway with the
  // same `redis:` enforces each key's limits together. Unset: each gateway
  // counts on its own.
  std::optional<tenancy::RedisAddress> redis;
  // While Redis is unreachable: reject (the default) answers requests that
  // need a limit check 503 limits_unavailable; local lets each gateway
  // enforce limit ÷ gateways (last seen), never the whole limit.
  enum class RedisDown { reject, local } redis_down = RedisDown::reject;
  // A held slot or seat lease in Redis lasts this long unless renewed (every
  // third of it): a crashed gateway's slots free within it. Shorter frees
  // them sooner at the cost of more renewals.
  std::chrono::milliseconds redis_lease_ttl{10000};
  // A request waiting for a slot or seat of its key held on any gateway
  // asks Redis again at least this often; a release on any gateway wakes it
  // at once (published), so this only covers a lost message.
  std::chrono::milliseconds redis_poll{500};
  // Signs the key records shared through Redis (tenancy/key_records.h): the
  // same on every gateway. Empty: records are not signed, and whoever can
  // write to Redis can add keys.
  std::string redis_secret;
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
  // The first is active at start; empty: no profiles (every instance runs).
  std::vector<ProfileConfig> profiles;
  SwitchingOptions switching;
  // The box's cards; empty: unknown (instances sharing a GPU are never
  // loaded together).
  std::vector<GpuConfig> gpus;
  SwappingOptions swapping;
  // Not read from the file: plan's estimates, filled in by the serve verb
  // (gateway/ cannot link plan/). A declared `memory` wins.
  MemoryEstimates memory_estimates;
  std::optional<TracingOptions> tracing;  // unset: no traces
  LogOptions log;
};

// Each instance's memory per GPU and where it came from: its `memory`, else
// the estimate, else nothing (unknown).
std::optional<MemoryFigure> instance_memory(const FleetConfig& config, std::size_t i);

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

}  // namespace switchyard::config
