// What capacity planning needs to know about a model, whichever file it came from (a GGUF, a
// Hugging Face config.json): its layer layout, attention geometry and the size of its weights.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::plan {

// What one layer keeps per sequence while generating.
enum class LayerKind {
  kFullAttention,     // K and V for every token of the context
  kSlidingAttention,  // K and V for at most `sliding_window` tokens
  kRecurrent,         // a fixed-size state (Mamba, gated delta net, RWKV, short conv)
  kNone,              // nothing (a layer without attention, e.g. head_count_kv == 0 in a GGUF)
};

struct LayerFacts {
  LayerKind kind = LayerKind::kFullAttention;
  uint32_t n_head_kv = 0;  // KV heads of an attention layer
};

struct ModelFacts {
  std::string source;           // the path that was read
  std::string format;           // "gguf", "hf-config" or "catalog" (built in, model_catalog.h)
  std::string architecture;     // general.architecture, or config.json model_type
  std::string name;             // a short name for fleet configs (from the file name)
  uint64_t context_length = 0;  // trained context in tokens; 0 when the file does not say

  std::vector<LayerFacts> layers;
  uint32_t key_length = 0;      // K elements per head (full-attention layers)
  uint32_t value_length = 0;    // V elements per head
  uint32_t key_length_swa = 0;  // K and V elements per head on sliding-window layers
  uint32_t value_length_swa = 0;
  uint32_t sliding_window = 0;  // tokens kept by sliding-window layers; 0 = none

  // Multi-head latent attention (DeepSeek V2/V3, Kimi K2, GLM-4.7-Flash): attention layers cache
  // one latent of kv_lora_rank + rope_dim elements per token and no separate V.
  bool mla = false;
  uint32_t kv_lora_rank = 0;
  // Rotary dimensions per head (GGUF rope.dimension_count, config.json qk_rope_head_dim); in
  // the MLA latent it is the shared RoPE key. 0 when the file does not say.
  uint32_t rope_dim = 0;

  // Recurrent layers: state elements per layer per sequence (llama.cpp's n_embd_r + n_embd_s),
  // held as f32.
  uint64_t recurrent_state_elements = 0;

  // Graph dimensions for the compute-buffer estimate (compute_buffers.h); 0 when unknown.
  uint32_t n_embd = 0;  // embedding_length / hidden_size
  uint32_t n_head = 0;  // query heads of an attention layer
  uint32_t n_ff = 0;    // FFN width one token passes through (MoE: per-expert width x experts used)
  uint64_t n_vocab = 0;  // vocabulary: the logits' width

  std::optional<uint64_t> weights_bytes;  // unknown for a config.json without safetensors index
  // Where the weights sit, from a GGUF's tensor names: blk.N.* per layer, output/output_norm on
  // the output layer's device, the rest (token_embd, ...) on the CPU as llama.cpp keeps them.
  // Empty layer_weights when the file has no tensor infos (config.json): spread evenly then.
  std::vector<uint64_t> layer_weights;
  uint64_t input_weights = 0;
  uint64_t output_weights = 0;
  uint32_t files = 1;              // shards read (split GGUF)
  std::vector<std::string> notes;  // assumptions made while reading, for the report

  uint32_t count(LayerKind kind) const;
};

// A shard of a split GGUF, named "<prefix>-%05d-of-%05d.gguf" (llama.cpp llama_split_path).
struct ShardName {
  std::string prefix;
  uint32_t index = 0;  // 1-based
  uint32_t count = 0;
};
std::optional<ShardName> parse_shard_name(std::string_view filename);

// A name usable in fleet configs: lower-case letters, digits, '.', '-' and '_', from a file or
// directory name ("Qwen3-27B-Q4_K_M-00001-of-00002.gguf" -> "qwen3-27b-q4_k_m").
std::string model_name_from_path(const std::string& path);

}  // namespace switchyard::plan
