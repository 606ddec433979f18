// The backend URLs doctor can check in a fleet config: every instance with a
// `url` (external instances). Supervised instances have only a `command` and
// no address until `switchyard serve` starts them, so they are skipped with a
// note saying so.
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
  std::vector<std::string> urls;  // without a trailing '/', duplicates removed
  std::vector<Finding> skipped;   // one note per instance doctor cannot check
};

// Reads `instances` at the top level and under each `profiles.<name>`. An
// Error (one line, naming the file) for an unreadable file, invalid YAML, no
// instances at all, or an instance with neither `url` nor `command`.
Result<FleetTargets> read_fleet_targets(const std::filesystem::path& file);

}  // namespace switchyard::doctor
