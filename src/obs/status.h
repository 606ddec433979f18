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
  bool routable = false;  // takes new requests now (ready and active)
};

struct ModelStatus {
  std::string name;
  int queued = 0;  // requests waiting for a slot
};

struct ProfileStatus {
  std::string name;
  bool active = false;
};

struct StatusSnapshot {
  bool draining = false;  // the gateway is shutting down
  std::vector<InstanceStatus> instances;
  std::vector<ModelStatus> models;
  std::vector<ProfileStatus> profiles;  // empty without profiles
};

}  // namespace switchyard::obs
