// The KV cache arithmetic: bytes per token, per sequence at a context, from a model's layer layout
// and the cache's element type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "plan/model_facts.h"

namespace switchyard::plan {

// KV cache element types the engines offer: llama.cpp -ctk/-ctv f16, q8_0, q4_0; vLLM
// --kv-cache-dtype auto (16-bit) or fp8.
enum class KvType { kF16, kQ8_0, kQ4_0, kFp8 };

std::optional<KvType> parse_kv_type(std::string_view text);
std::string_view kv_type_name(KvType type);
// Bytes per cached element: f16 2, q8_0 34/32 = 1.0625, q4_0 18/32 = 0.5625 (ggml block sizes),
// fp8 1.
double kv_bytes_per_element(KvType type);
// Why llama.cpp cannot hold this model's cache in `type`, if it cannot: it quantizes the cache in
// rows of 32-element blocks per head, so q8_0 and q4_0 need head widths that are multiples of 32.
std::optional<std::string> llama_cache_refusal(const ModelFacts& model, KvType type);

// What one sequence costs. Recurrent state is f32 whatever the KV type (llama.cpp keeps r/s
// states in f32; vLLM's default mamba state dtype for these models is no larger).
struct KvFootprint {
  double full_bytes_per_token = 0;     // layers whose cache grows with the whole context
  double sliding_bytes_per_token = 0;  // sliding-window layers, until the window is full
  uint32_t sliding_window = 0;
  uint64_t state_bytes_per_sequence = 0;  // recurrent layers, independent of the context

  // Bytes per token while the context is shorter than the window: what engines report.
  double bytes_per_token() const { return full_bytes_per_token + sliding_bytes_per_token; }
  // Bytes one sequence holds at `context` tokens.
  double bytes_per_sequence(uint64_t context) const;
};

KvFootprint kv_footprint(const ModelFacts& model, KvType type);

}  // namespace switchyard::plan
