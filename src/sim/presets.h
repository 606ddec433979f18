// Named engine models calibrated from the field reports (BRIEF.md): one
// instance's timing, slots and KV, and the dialect it speaks. docs/sim.md
// gives the calibration formula and the measured result of each.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine.h"

namespace switchyard::sim {

struct Preset {
  std::string name;
  std::string dialect;  // "llamacpp" or "vllm"
  std::string summary;
  EngineOptions engine;
};

// All presets, in the order docs/sim.md lists them.
const std::vector<Preset>& presets();
const Preset* find_preset(std::string_view name);

}  // namespace switchyard::sim
