// Ready-to-paste engine command lines (llama-server, vllm serve) and a Switchyard fleet config
// for a chosen topology. `${PORT}` in a command is substituted by the gateway per instance.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "plan/kv_math.h"
#include "plan/model_facts.h"
#include "plan/topology.h"

namespace switchyard::plan {

enum class Engine { kLlamaCpp, kVllm };

std::optional<Engine> parse_engine(std::string_view text);  // "llamacpp" or "vllm"
std::string_view engine_name(Engine engine);

// Whether the engine has a KV cache of this type: llama.cpp has no fp8 cache, vLLM no q8_0/q4_0.
bool engine_supports(Engine engine, KvType type);

struct LaunchInput {
  const ModelFacts* model = nullptr;
  std::string model_path;             // absolute path given to the engine
  Engine engine = Engine::kLlamaCpp;  // the engine the fleet config runs
  KvType kv_type = KvType::kF16;
  uint64_t context = 0;
  const InstanceLayout* layout = nullptr;
  double vllm_memory_fraction = 0.9;
  // Mixed cards: llama.cpp's --tensor-split follows the first instance's card sizes.
  const GpuSpec* gpus = nullptr;
  std::optional<uint32_t> gpu_layers;  // llama.cpp -ngl when partial; none = all (-ngl 999)
  uint32_t n_ubatch = 512;             // llama.cpp -ub (written only when not the default)
};

struct LaunchPlan {
  std::optional<std::string> llamacpp;  // none when llama.cpp cannot run this KV type
  std::optional<std::string> vllm;      // none when vLLM cannot
  std::string fleet_yaml;               // for input.engine
};

LaunchPlan launch_plan(const LaunchInput& input);

}  // namespace switchyard::plan
