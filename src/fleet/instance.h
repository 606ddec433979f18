// One engine the gateway can send requests to.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "config/fleet_config.h"
#include "http/upstream.h"
#include "http/url.h"

namespace switchyard::fleet {

enum class InstanceState {
  starting,       // process launched or URL configured, not yet healthy
  ready,          // healthy: takes requests
  ejected,        // failed a probe or a request; re-probed with backoff
  restarting,     // its engine exited; restarted after a backoff
  crash_looping,  // its engine keeps exiting; still restarted, at the longest backoff
  down,           // cannot be used (bad URL, command that cannot start)
  removed,        // gone from the config (reload): finishing its requests, then stopped
  stopped,        // stopped on purpose (shutdown, or removed and drained)
};

const char* to_string(InstanceState state);

// What the operator (or a profile switch, or a reload) wants of an
// instance, apart from its health (as HAProxy keeps a server's admin state
// apart from its checks): the router sends new requests only to an instance
// that is both active and ready. Derived from its admin causes.
enum class AdminState {
  active,    // takes new requests when healthy
  draining,  // finishes what it has, takes nothing new
  parked,    // takes nothing (stopped or asleep on purpose)
};

const char* to_string(AdminState state);

// Why an instance takes nothing new. Each party sets and clears only its
// own cause, so one never undoes another's: an instance the operator drained
// stays drained through a profile switch and back.
enum class AdminCause : std::uint8_t {
  operator_drain = 1 << 0,    // POST /admin/instances/NAME/drain
  profile_draining = 1 << 1,  // its profile is being switched off: finishing its requests
  profile_parked = 1 << 2,    // its profile is off: stopped or asleep
  reload_removing = 1 << 3,   // gone from the config: finishing, then stopped
  model_evicting = 1 << 4,    // being unloaded to free memory: finishing its requests
  model_unloaded = 1 << 5,    // load: on-demand and not loaded
};

const char* to_string(AdminCause cause);

// Counts the changes to what the router reads of any instance (its health,
// admin causes, slots, trial, KV size, generation, engine sleep): the router
// keeps each model's candidates between requests, a fleet of hundreds being
// visited for every one, and builds them again when this moves. Process-wide:
// a change to one fleet's instance costs another fleet's router a rebuild.
inline std::atomic<std::uint64_t> route_revision{0};
inline void route_changed() {
  route_revision.fetch_add(1, std::memory_order_relaxed);
}

// A field of an instance that the router reads: read as a T, and every
// assignment of a new value counts as a route change (route_revision).
template <class T>
class RouteField {
 public:
  RouteField(T value = T{}) : value_(value) {}  // NOLINT: reads and writes as a T
  RouteField(const RouteField&) = default;
  RouteField& operator=(const RouteField& o) { return *this = o.value_; }
  RouteField& operator=(T value) {
    if (!(value == value_)) {
      value_ = value;
      route_changed();
    }
    return *this;
  }
  RouteField& operator++() {
    ++value_;
    route_changed();
    return *this;
  }
  operator T() const { return value_; }  // NOLINT: reads as a T
  T get() const { return value_; }

 private:
  T value_;
};

// A set of AdminCause; empty: active. Its changes are route changes.
class AdminCauses {
 public:
  AdminCauses() = default;
  AdminCauses(const AdminCauses&) = default;
  AdminCauses& operator=(const AdminCauses& o) {
    if (bits_ != o.bits_) route_changed();
    bits_ = o.bits_;
    return *this;
  }
  bool has(AdminCause c) const { return bits_ & static_cast<std::uint8_t>(c); }
  bool empty() const { return bits_ == 0; }
  // Whether the set changed.
  bool set(AdminCause c, bool on) {
    const auto before = bits_;
    bits_ = on ? bits_ | static_cast<std::uint8_t>(c) : bits_ & ~static_cast<std::uint8_t>(c);
    if (bits_ == before) return false;
    route_changed();
    return true;
  }
  // Parked when an engine is down on purpose, else draining for any cause.
  AdminState state() const {
    if (has(AdminCause::profile_parked) || has(AdminCause::model_unloaded))
      return AdminState::parked;
    return empty() ? AdminState::active : AdminState::draining;
  }
  // The causes' names, for the status ("operator, profile-draining").
  std::string describe() const;
  bool operator==(const AdminCauses&) const = default;

 private:
  std::uint8_t bits_ = 0;
};

struct Instance {
  std::size_t index = 0;  // position in the fleet, stable for the fleet's life
  // What the router reads of every instance of a model when it builds its
  // candidates comes first, side by side: a fleet of hundreds is visited
  // then, and by every request that narrows them (instances tried).
  RouteField<int> slots = 1;       // requests it runs at once
  RouteField<long> kv_tokens = 0;  // tokens its KV cache holds (/props n_ctx × slots); 0: unknown
  // Counts the times it turned healthy after starting, and its engine's own
  // sleeps (llama-server frees its context): a new value means an engine
  // whose prefix cache is empty.
  RouteField<std::uint64_t> generation = 0;
  RouteField<InstanceState> state = InstanceState::starting;  // health
  AdminCauses causes;                                         // admin state, apart from health
  // Outlier detection: ejections for failed requests since the last request
  // it served well (each one longer), and whether it is back on trial (one
  // request at a time until one succeeds).
  int ejections = 0;
  RouteField<bool> on_trial = false;
  int restarts = 0;  // times its engine exited and was started again (the console shows it)
  // Profiles: whether its engine sleeps (sleep: true, switched off), and why
  // it last failed to start or exited, for a switch's rollback message.
  bool asleep = false;
  // The engine's own sleep (llama-server --sleep-idle-seconds), from its
  // router reports: it stays routable, its next request wakes it.
  enum class EngineSleep { awake, asleep, waking };
  RouteField<EngineSleep> engine_sleep = EngineSleep::awake;
  config::InstanceConfig config;
  std::optional<http::Url> url;  // known once the port is chosen
  std::string problem;
  std::optional<int> exit_code;  // of its engine's last exit (a failed load's, for /v1/models)
  std::unique_ptr<http::UpstreamPool> pool;  // request traffic; set with url

  const std::string& name() const { return config.name; }
  const std::string& model() const { return config.model; }
  // The model name to put in requests sent to this engine.
  const std::string& served_model() const {
    return config.served_model ? *config.served_model : config.model;
  }
  // Requests the router may have on it at once.
  int capacity() const { return on_trial ? std::min(slots.get(), 1) : slots.get(); }
  AdminState admin() const { return causes.state(); }
  // Whether the router may send it a new request.
  bool routable() const { return state == InstanceState::ready && causes.empty(); }
  // Whether it is on its way to routable without anyone's intervention: an
  // engine the gateway started (or restarts after an exit). An external URL
  // that is not answering may never come, so nobody waits for it.
  bool coming() const {
    return causes.empty() && config.command.has_value() &&
           (state == InstanceState::starting || state == InstanceState::restarting);
  }
};

}  // namespace switchyard::fleet
