// Each GPU's memory, numbered as the engines number the cards, for on-demand
// models when fleet.yaml declares no `gpus:` (docs/models.md). ROCm: the KFD
// topology's GPU nodes in node order (HIP's device order), each read from its
// PCI device's mem_info_vram_total. NVIDIA: `nvidia-smi --query-gpu=index,
// memory.total`, in PCI bus order (CUDA numbers the same way with
// CUDA_DEVICE_ORDER=PCI_BUS_ID).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::doctor {

struct CardMemory {
  std::string id;  // "0", "1", … as instances' `gpus:` name them
  std::uint64_t bytes = 0;
  std::string source;  // where the figure was read
};

// From the sysfs under `root` (/sys); empty without amdgpu's KFD topology. A
// GPU node whose memory cannot be read ends the list there: the ids after it
// would be wrong.
std::vector<CardMemory> read_amd_card_memory(const std::filesystem::path& root);

// nvidia-smi's `--format=csv,noheader,nounits` lines ("0, 24576": MiB); empty
// when a line does not parse.
std::vector<CardMemory> parse_nvidia_card_memory(std::string_view csv);

// The box's cards: AMD's from sysfs, else NVIDIA's when nvidia-smi runs; empty
// when neither answers.
std::vector<CardMemory> read_card_memory(const std::filesystem::path& root);

}  // namespace switchyard::doctor
