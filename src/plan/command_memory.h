// The memory an engine's command line takes on each of its GPUs, by plan's model: for
// llama-server with -m GGUF, the weights, the KV cache at its -c/-np/-ctk/-ctv and the compute
// buffers, placed by -ngl, -sm, -ts and -mg as device_breakdown places them, plus the margin plan
// keeps free on every card; for vllm serve, --gpu-memory-utilization of each card. serve uses it
// to tell which instances can be resident together.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace switchyard::plan {

struct CommandMemory {
  std::vector<uint64_t> per_gpu;  // bytes on each of the instance's GPUs, in their order
  std::string source;             // how the figures were reached, one line for the log
};

// `argv`: the command's words, the program first. `cards`: the memory of each of the instance's
// GPUs in order (0: unknown); at least one. Fails with a line naming the flag when the command
// is not an engine plan models, a value does not parse, or the model cannot be read.
Result<CommandMemory> estimate_command_memory(const std::vector<std::string>& argv,
                                              const std::vector<uint64_t>& cards);

}  // namespace switchyard::plan
