// A JSON Schema (draft 2020-12) of fleet.yaml, for editors
// (yaml-language-server's `# yaml-language-server: $schema=...` modeline)
// and CI checks; `switchyard config schema` prints it. It describes the
// fields the loader (fleet_config.cpp) accepts: a unit test compares the two
// field lists at every level, so neither can grow without the other.
#pragma once

#include <boost/json/value.hpp>

namespace switchyard::config {

boost::json::value fleet_config_schema();

}  // namespace switchyard::config
