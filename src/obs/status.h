// One read-only picture of the gateway at a moment: what /health, /metrics
// (and the admin API and dashboard to come) show, built in one place so they
// never disagree.
#pragma once

#include <string>
#include <vector>

namespace switchyard::obs {

struct InstanceStatus {
  std::string name;  // unique among the current instances
  std::string model;
  std::string
      health;         // starting, ready, ejected, restarting, crash-looping, down, removed, stopped
  std::string admin;  // active, draining, parked
  std::string url;    // credentials redacted; empty until known
  std::string gpus;   // the instance's gpus, e.g. "0,1"
  int slots = 0;
  int in_flight = 0;
  int restarts = 0;       // times its engine was restarted after it exited
  bool routable = false;  // takes new requests now (ready and active)
  // Output tokens per second streamed through the gateway from it over the
  // last kGenerationWindow (obs/generation_meter.h).
  double tokens_per_second = 0;
  // Prefix-cache hits per token queried over the advisor's last window
  // (vLLM); negative when the engine does not say.
  double prefix_cache_hit_ratio = -1;
  // Why its admin state is not active ("operator, profile-parked"); empty
  // when active.
  std::string admin_causes;
  // load: on-demand: loaded when a request needs it, so the gateway serves
  // its model while it is unloaded.
  bool on_demand = false;
};

// A finding of the live advisor (advisor/live_advisor.h) in force now.
struct FindingStatus {
  std::string instance;
  std::string check;     // e.g. "backend.kv_full"
  std::string severity;  // "note" or "warning"
  std::string message;
};

struct ModelStatus {
  std::string name;
  int queued = 0;  // requests waiting for a slot
};

struct ProfileStatus {
  std::string name;
  bool active = false;
};

// The Redis the keys' limits and records are shared through (docs/keys.md).
struct RedisStatus {
  std::string state = "unconfigured";  // up, down or unconfigured (no redis:)
  long long since = 0;                 // Unix seconds of the last change; 0: unconfigured
  std::string last_error;              // why it is down; empty while up
  // redis_down: reject, where a Redis down refuses every limited request
  // (the gateway is then unhealthy); with `local` it is not.
  bool required = false;
};

struct StatusSnapshot {
  bool draining = false;  // the gateway is shutting down
  RedisStatus redis;
  std::vector<InstanceStatus> instances;
  std::vector<ModelStatus> models;
  std::vector<FindingStatus> findings;
  std::vector<ProfileStatus> profiles;  // empty without profiles
};

}  // namespace switchyard::obs
