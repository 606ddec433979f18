// The backend URLs doctor can check in a fleet config: every instance with a
// `url` (external instances). Supervised instances have only a `command` and
// no address until `switchyard serve` starts them: doctor asks the running
// gateway at the config's `listen` for them (gateway_targets.h), and names
// the ones it still cannot reach.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "advisor/finding.h"
#include "common/result.h"

namespace switchyard::doctor {

using advisor::Finding;
using advisor::Severity;

struct FleetTargets {
  std::vector<std::string> urls;          // without a trailing '/', duplicates removed
  std::vector<Finding> skipped;           // one note per instance without a url (supervised)
  std::vector<std::string> supervised;    // their names, in the skipped notes' order
  std::string listen = "127.0.0.1:8080";  // the gateway's `listen` (FleetConfig's default)
};

// Reads `instances` at the top level and under each `profiles.<name>`. An
// Error (one line, naming the file) for an unreadable file, invalid YAML, no
// instances at all, or an instance with neither `url` nor `command`.
Result<FleetTargets> read_fleet_targets(const std::filesystem::path& file);

// A base URL without its trailing slashes.
std::string trim_slash(std::string url);

}  // namespace switchyard::doctor
