// Topology advice: how to spread a model over a box's GPUs so that the wanted context and
// concurrency fit. The field reports' order of preference: one instance per card when a card holds
// it; else the fewest cards in a layer split, the rest running more instances, widened so that no
// card is left idle when that keeps the instance count; tensor parallel only when asked for.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "plan/byte_size.h"
#include "plan/kv_math.h"

namespace switchyard::plan {

enum class Layout {
  kReplicas,        // one instance per card
  kLayerSplit,      // llama.cpp --split-mode layer, vLLM --pipeline-parallel-size
  kTensorParallel,  // llama.cpp --split-mode row, vLLM --tensor-parallel-size
};

std::string_view layout_name(Layout layout);  // "replicas", "layer_split", "tensor_parallel"

struct CapacityRequest {
  GpuSpec gpus;
  uint64_t context = 0;      // tokens per sequence
  uint32_t concurrency = 1;  // sequences the whole box holds at once; the gateway spreads them
  std::optional<uint32_t> tensor_parallel;  // a tensor-parallel size the user asked for
  double memory_fraction = 1.0;  // share of each card the engine may use (vLLM's utilization)
  // Mixed cards: vLLM splits the weights evenly over an instance's cards, so its smallest card
  // bounds each one; llama.cpp's layer split follows each card's free memory.
  bool even_split = false;
  uint64_t overhead_per_gpu = 0;  // per card, before any KV: a margin for the runtime context
  // The compute buffers of one instance of `gpus` cards in `layout` holding `slots` sequences,
  // over all its cards (llama.cpp sizes them by -c, so by the slots); empty when the engine's
  // fraction already leaves room for them (vLLM).
  std::function<double(Layout layout, uint32_t gpus, uint32_t slots)> compute_bytes;
  uint64_t weights_bytes = 0;
};

// One way to lay instances over the cards, and what each instance then holds.
struct InstanceLayout {
  Layout layout = Layout::kReplicas;
  uint32_t gpus_per_instance = 1;
  uint32_t instances = 0;
  uint32_t idle_gpus = 0;  // cards left over when the count does not divide
  // The fewest cards per instance that fit, when leftover cards were added to the split; else 0.
  uint32_t widened_from = 0;
  uint32_t slots_per_instance =
      0;  // sequences each instance must hold: ceil(concurrency/instances)
  // The KV pool of one instance: its cards' usable memory minus the weights and the overhead
  // (mixed cards: the smallest instance's). Negative when the weights alone do not fit.
  double pool_bytes_per_instance = 0;
  std::optional<uint64_t> pool_tokens_per_instance;  // at bytes_per_token; none if no KV grows
  // pool / bytes per sequence at the context: vLLM's "Maximum concurrency for N tokens per
  // request". None when a sequence costs nothing.
  std::optional<double> max_concurrency_per_instance;
  bool fits = false;
};

struct TopologyPlan {
  InstanceLayout chosen;  // the advice; when nothing fits, the roomiest layout tried
  bool fits = false;
  double bytes_needed = 0;     // concurrency x bytes per sequence, over the whole box
  uint64_t max_sequences = 0;  // whole sequences at the context, over every instance of `chosen`
  // Longest context at which `chosen` holds its slots; none when it is unbounded (no layer's
  // cache grows with the context), 0 when not even an empty sequence fits.
  std::optional<uint64_t> max_context;
};

// Preconditions: gpus.count >= 1, context >= 1, concurrency >= 1, tensor_parallel (if set) in
// [1, gpus.count].
TopologyPlan plan_topology(const CapacityRequest& request, const KvFootprint& kv);

}  // namespace switchyard::plan
