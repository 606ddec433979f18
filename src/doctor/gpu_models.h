// GPU models doctor recognises by PCI id, and the known issues the field
// reports and upstream trackers document for them. Every id and every issue
// carries its source in gpu_models.cpp; unknown cards are simply reported by id.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::doctor {

struct GpuModel {
  std::uint16_t vendor_id;
  std::uint16_t device_id;
  std::string_view name;  // as lspci names the die and its boards
  std::string_view gfx;   // the LLVM/ROCm target, "" when not an AMD GPU
};

// nullptr for ids doctor does not know.
const GpuModel* find_gpu_model(std::uint16_t vendor_id, std::uint16_t device_id);

// "gfx1201" for kfd's gfx_target_version 120001 (major·10000 + minor·100 +
// stepping, the last two printed in hex as in gfx90a); "" for 0.
std::string gfx_name(std::uint32_t gfx_target_version);

struct KnownIssue {
  std::string_view id;       // stable id, used as the finding's check suffix
  std::string_view gfx;      // the target it affects
  int min_gpus;              // how many such GPUs in one box before it matters
  std::string_view summary;  // what fails, in plain words
  std::string_view advice;   // what to do instead
  std::string_view sources;  // tracker issues to follow
};

// The known issues for one gfx target (empty for unknown targets).
std::vector<const KnownIssue*> known_issues_for(std::string_view gfx);

}  // namespace switchyard::doctor
