// One engine the gateway can send requests to.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "fleet/fleet_config.h"
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

struct Instance {
  std::size_t index = 0;  // position in the fleet, stable for the fleet's life
  InstanceConfig config;
  std::optional<http::Url> url;  // known once the port is chosen
  int slots = 1;                 // requests it runs at once
  InstanceState state = InstanceState::starting;
  std::unique_ptr<http::UpstreamPool> pool;  // request traffic; set with url

  const std::string& name() const { return config.name; }
  const std::string& model() const { return config.model; }
  // The model name to put in requests sent to this engine.
  const std::string& served_model() const {
    return config.served_model ? *config.served_model : config.model;
  }
};

}  // namespace switchyard::fleet
