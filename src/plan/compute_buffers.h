// llama.cpp's compute buffers, estimated the way llama.cpp sizes them: at start-up it reserves the
// worst-case prompt-processing graph for n_tokens = min(n_ctx, n_ubatch) tokens with every token
// an output and the cache simulated full (src/llama-context.cpp, sched_reserve / graph_reserve),
// and the allocator reuses memory from layer to layer, so a card needs the largest working set
// of one layer (plus the logits on the card holding the output layer), not one per layer.
#pragma once

#include <cstdint>

#include "plan/model_facts.h"

namespace switchyard::plan {

struct ComputeInput {
  const ModelFacts* model = nullptr;
  uint64_t n_ctx = 0;       // -c: the whole cache of the instance (context x slots)
  uint32_t n_seq = 1;       // -np
  uint32_t n_ubatch = 512;  // -ub, llama.cpp's default
  bool flash_attention = true;
};

// Bytes, per buffer llama-server logs ("CUDA0 compute buffer size", "CUDA_Host compute buffer
// size", "CUDA_Host output buffer size").
struct ComputeEstimate {
  uint32_t n_tokens = 0;   // min(n_ctx, n_ubatch): the graph's batch
  double layer_card = 0;   // a card holding repeating layers
  double output_card = 0;  // the card holding the output layer (adds the logits)
  double host = 0;         // pinned host memory: the input embeddings and the KQ mask
  double host_output = 0;  // logits of the last batch: n_vocab x n_seq x f32
  // A layer card's buffer if flash attention is off (or unavailable to -fa auto): the KQ matrix
  // [n_kv, n_tokens, n_head] in f32 is then materialised.
  double layer_card_without_fa = 0;
};

ComputeEstimate estimate_compute(const ComputeInput& input);

}  // namespace switchyard::plan
