// Where one instance's memory goes, card by card, like gguf-parser-go's estimate table: weights,
// KV cache and compute buffers per GPU, and what stays in the host's RAM. Placement follows the
// engines: llama.cpp's layer split hands layer il to the card whose cumulative --tensor-split
// share covers il / (offloaded layers + 1), the output layer counting as the last one, and keeps
// the input layer on the CPU (src/llama-model.cpp, load_tensors); its row split spreads the
// weights but keeps KV and intermediate results on the main GPU (llama-server --help,
// --split-mode row); vLLM shards weights and KV heads evenly under tensor parallel and gives
// each pipeline stage an even run of layers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/compute_buffers.h"
#include "plan/engine_flags.h"
#include "plan/kv_math.h"
#include "plan/model_facts.h"
#include "plan/topology.h"

namespace switchyard::plan {

// llama.cpp has no utilization knob: it allocates weights, the KV cache it is told to and its
// compute buffers (estimated, compute_buffers.h). Beyond those it is planned with the margin its
// own --fit leaves free on every device (--fit-target, default 1024 MiB): the GPU runtime's
// context and what the estimate misses.
inline constexpr uint64_t kLlamaCppCardMargin = uint64_t{1} << 30;

struct DeviceUse {
  std::string name;          // "CPU" or "GPU0", "GPU1", ... (the instance's cards in order)
  uint32_t layers = 0;       // repeating layers held
  bool input_layer = false;  // token embeddings
  bool output_layer = false;
  double weights = 0;
  double kv = 0;
  double compute = 0;
  double capacity = 0;  // usable bytes (fraction x card - overhead); 0 for the CPU (not planned)

  double total() const { return weights + kv + compute; }
  bool fits() const { return capacity <= 0 || total() <= capacity; }
};

struct BreakdownInput {
  const ModelFacts* model = nullptr;
  KvType kv_type = KvType::kF16;
  Engine engine = Engine::kLlamaCpp;
  Layout layout = Layout::kReplicas;
  std::vector<uint64_t> cards;  // this instance's cards, bytes each
  uint64_t context = 0;         // tokens per sequence
  uint32_t slots = 1;           // sequences the instance holds
  uint32_t gpu_layers = 0;      // llama.cpp -ngl, capped at layers + 1 (= everything)
  uint32_t n_ubatch = 512;
  double memory_fraction = 1.0;
  uint64_t overhead_per_gpu = 0;
  // llama.cpp --tensor-split proportions, one per card; empty: each card's size in GiB (what the
  // plan's own commands pass). All zero but one card = everything on that card (-sm none).
  std::vector<double> tensor_split;
};

struct Breakdown {
  std::vector<DeviceUse> devices;  // the CPU first, then the cards
  ComputeEstimate compute;         // the llama.cpp buffers behind the compute column
};

Breakdown device_breakdown(const BreakdownInput& input);

// llama.cpp -ngl N: the GPU part of the model, for the capacity plan. Layers before
// n_layer + 1 - N stay on the CPU with their KV; the output layer counts as the last layer, so
// it is the first offloaded. Its weights are what the cards load (no input layer).
ModelFacts offloaded_part(const ModelFacts& model, uint32_t gpu_layers);

// Weights per repeating layer, from the tensor infos or, without them, spread evenly.
double layer_weight(const ModelFacts& model, size_t layer);

}  // namespace switchyard::plan
