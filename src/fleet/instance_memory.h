// Which instances a box's cards can never hold, alone or two together, from plain numbers: what
// each instance needs per GPU (declared, or serve's plan estimate) and each card's memory. For
// `serve --check` and the log; the gateway never links the planner.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace switchyard::fleet {

// One instance's claim on the box's cards.
struct MemoryUser {
  std::string name;
  std::vector<std::string> gpus;       // card ids, as instances name them
  std::vector<std::uint64_t> per_gpu;  // bytes on each, in the same order
};

// A card that cannot hold what is asked of it: one instance alone, or two that share it and so
// can never be resident together.
struct MemoryClash {
  std::vector<std::string> instances;  // one or two names
  std::string gpu;
  std::uint64_t need = 0;  // bytes they need on it together
  std::uint64_t have = 0;  // the card's memory
};

// Every instance too big for a card of its own, then every pair (each not too big alone) that
// overflows a card they share, in config order. Cards missing from `cards` (memory unknown) are
// not judged.
std::vector<MemoryClash> memory_clashes(const std::vector<MemoryUser>& users,
                                        const std::map<std::string, std::uint64_t>& cards);

}  // namespace switchyard::fleet
