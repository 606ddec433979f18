// GPU models `plan --gpu` knows: their memory (so `--gpus 4` is enough) and the ROCm target that
// decides which of doctor's known issues apply. The issues themselves live in doctor
// (doctor/gpu_models.h, with their trackers); the CLI hands them to the plan.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::plan {

enum class GpuVendor { kAmd, kNvidia };

struct GpuCard {
  std::string_view key;   // what --gpu takes: "r9700"
  std::string_view name;  // "Radeon AI PRO R9700"
  GpuVendor vendor;
  std::string_view gfx;  // ROCm target, "" for NVIDIA
  uint64_t memory;       // bytes on the board
};

// nullptr for a name not in the table (case-insensitive, "rx"/"rtx" prefixes optional).
const GpuCard* find_gpu_card(std::string_view name);
std::string gpu_card_names();  // "r9700, 7900xtx, ..." for error messages

// One of doctor's known issues for the card's target, as the plan applies it.
struct CardIssue {
  std::string id;         // doctor's id, e.g. "vllm-tp-gfx1201"
  uint32_t min_gpus = 2;  // cards in one instance before it bites
  std::string summary;
  std::string advice;
  std::string sources;
};

}  // namespace switchyard::plan
