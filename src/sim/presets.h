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

// What a timing model's speed means, in one phrase: the pure decode rate of
// one sequence (its step's tokens over the step's time) and the rate
// delivered end to end to one request of a 2048-token prompt and 256 tokens
// on an idle engine (prefill included); "no delays" when steps take no time.
std::string describe_speed(const TimingOptions& timing);

// One line of `switchyard sim --list-presets`: name, dialect, slots, what it
// models and describe_speed().
std::string preset_line(const Preset& preset);

}  // namespace switchyard::sim
