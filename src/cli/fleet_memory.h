// serve's memory figures: plan's estimate of every instance's command, for the gateway (as plain
// numbers: it does not link plan), the log and `serve --check`, with the instances that can
// never be resident together.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "config/fleet_config.h"
#include "doctor/card_memory.h"
#include "fleet/instance_memory.h"
#include "plan/command_memory.h"

namespace switchyard::cli {

struct FleetMemory {
  std::map<std::string, plan::CommandMemory> estimates;  // by instance name
  std::vector<std::string> lines;                        // one per instance with a command and GPUs
  std::vector<fleet::MemoryClash> clashes;               // from the estimates that could be made
};

// Estimates every instance that has a command and GPUs and no declared `memory`, and says, per
// instance, what it needs and where that came from (or why it could not be estimated); declared
// figures count for the clashes too. `cards`: each card's memory by id; a
// card not in it is unknown. Fails (a config error naming the file and the instance's command)
// when an instance alone needs more than one of its cards has.
Result<FleetMemory> estimate_fleet_memory(const config::FleetConfig& config,
                                          const std::map<std::string, std::uint64_t>& cards);

// "GPU 0 (24 GiB) cannot hold coder and vision together: they need 30 GiB".
std::string clash_text(const fleet::MemoryClash& clash);

// The estimates as the gateway takes them (FleetConfig::memory_estimates): one figure per GPU,
// the largest of the instance's (conservative for an uneven split).
config::MemoryEstimates handover(const FleetMemory& memory);

// The box's cards by id, from the config's `gpus:`; a card without a declared memory is unknown.
std::map<std::string, std::uint64_t> card_memory(const config::FleetConfig& config);

// Without `gpus:` in the config, the cards read from the box (doctor/card_memory) become its
// `gpus:` when they include every GPU id an instance names. Says what it did, or why not; nothing
// when the config declares its cards (declared wins) or no instance names a GPU.
std::optional<std::string> adopt_box_cards(config::FleetConfig& config,
                                           const std::vector<doctor::CardMemory>& box);

// What serve does at start and on reload: the box's cards adopted (read under `sys_root`), then
// estimate_fleet_memory over them; the adoption's line comes first in `lines`.
Result<FleetMemory> serve_memory(config::FleetConfig& config,
                                 const std::filesystem::path& sys_root = "/sys");

}  // namespace switchyard::cli
