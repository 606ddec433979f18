// What each instance needs of its GPUs' memory, as plain numbers: the gateway decides residency
// with them and never links the planner. serve (cli/) fills them from plan's estimate of each
// instance's command (plan/command_memory.h); a declared `memory` wins over them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::fleet {

struct InstanceMemory {
  // Bytes on each of the instance's GPUs, in the order of its `gpus` ids ("1,0": GPU 1 first).
  std::vector<std::uint64_t> per_gpu;
  std::string source;  // where the figures came from, one line for the log and --check

  bool operator==(const InstanceMemory&) const = default;
};

// By instance name.
using MemoryEstimates = std::map<std::string, InstanceMemory>;

// The GPU ids in an instance's `gpus` ("0", "0,1"); nullopt when a part is not a whole number.
std::optional<std::vector<int>> parse_gpu_ids(std::string_view gpus);

// One instance's claim on the box's cards.
struct MemoryUser {
  std::string name;
  std::vector<int> gpus;               // card ids
  std::vector<std::uint64_t> per_gpu;  // bytes on each, in the same order
};

// A card that cannot hold what is asked of it: one instance alone, or two that share it and so
// can never be resident together.
struct MemoryClash {
  std::vector<std::string> instances;  // one or two names
  int gpu = 0;
  std::uint64_t need = 0;  // bytes they need on it together
  std::uint64_t have = 0;  // the card's memory
};

// Every instance too big for a card of its own, then every pair (each not too big alone) that
// overflows a card they share, in config order. Cards missing from `cards` (memory unknown) are
// not judged.
std::vector<MemoryClash> memory_clashes(const std::vector<MemoryUser>& users,
                                        const std::map<int, std::uint64_t>& cards);

}  // namespace switchyard::fleet
