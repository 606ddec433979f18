// libFuzzer target for the fleet config loader: any text gives a config or
// an error that names the file, never a crash; a config that loads also
// passes the reload helpers.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "config/fleet_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace switchyard::config;
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  const auto config = parse_fleet_config(yaml, "fuzz.yaml");
  if (!config) {
    if (!config.error().message.starts_with("fuzz.yaml")) std::abort();
    return 0;
  }
  if (config->instances.empty()) std::abort();
  static const FleetConfig defaults =
      *parse_fleet_config("instances: [{model: m, url: 'http://h:1'}]", "d");
  const FleetConfig kept = keep_restart_only_settings(defaults, *config);
  if (!restart_only_changes(defaults, kept).empty()) std::abort();
  (void)default_max_connections(1024, *config);
  return 0;
}
