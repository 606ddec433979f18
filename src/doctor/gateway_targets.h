// A running Switchyard gateway as doctor's way to the engines behind it: the gateway's /health
// lists every instance with its address (to a caller with an API key when keys are configured),
// supervised ones included, which a fleet config alone cannot give.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "advisor/finding.h"
#include "doctor/backend_probe.h"

namespace switchyard::doctor {

struct GatewayInstance {
  std::string name;
  std::string model;
  std::string state;  // the gateway's view: ready, starting, ejected, ...
  std::string url;    // empty until the gateway has started it
};

struct GatewayLookup {
  bool reachable = false;  // /health answered at all
  bool gateway = false;    // ... as a Switchyard gateway (Server: switchyard or its body)
  bool detail = false;     // ... listing its instances
  std::vector<GatewayInstance> instances;
  std::string error;  // why it could not be reached
};

// GET `url`/health, sending `key` as a bearer token when given. `url` ends without '/'.
GatewayLookup lookup_gateway(const std::string& url, const std::optional<std::string>& key,
                             const Fetcher& fetch, std::chrono::milliseconds timeout);

// What doctor says about a gateway it looked behind: a note listing the instances it will check,
// or a warning when /health hid them (no key, or a key it refused).
advisor::Finding gateway_finding(const std::string& url, const GatewayLookup& lookup,
                                 bool key_given);

// "0.0.0.0:8080" -> "http://127.0.0.1:8080": the address a local client reaches a `listen` at.
std::string listen_url(const std::string& listen);

}  // namespace switchyard::doctor
