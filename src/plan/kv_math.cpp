#include "plan/kv_math.h"

#include <algorithm>

namespace switchyard::plan {

std::optional<std::string> llama_cache_refusal(const ModelFacts& model, KvType type) {
  if (type != KvType::kQ8_0 && type != KvType::kQ4_0) return std::nullopt;
  const bool attention =
      model.count(LayerKind::kFullAttention) + model.count(LayerKind::kSlidingAttention) > 0;
  const uint32_t width = model.mla ? model.kv_lora_rank + model.rope_dim
                                   : std::min(model.key_length, model.value_length);
  if (!attention || width % 32 == 0) return std::nullopt;
  return std::string(kv_type_name(type)) +
         " needs head dimensions that are multiples of 32; this model's are " +
         std::to_string(width);
}

std::optional<KvType> parse_kv_type(std::string_view text) {
  if (text == "f16") return KvType::kF16;
  if (text == "q8_0") return KvType::kQ8_0;
  if (text == "q4_0") return KvType::kQ4_0;
  if (text == "fp8") return KvType::kFp8;
  return std::nullopt;
}

std::string_view kv_type_name(KvType type) {
  switch (type) {
    case KvType::kF16:
      return "f16";
    case KvType::kQ8_0:
      return "q8_0";
    case KvType::kQ4_0:
      return "q4_0";
    case KvType::kFp8:
      return "fp8";
  }
  return "f16";
}

double kv_bytes_per_element(KvType type) {
  switch (type) {
    case KvType::kF16:
      return 2.0;
    case KvType::kQ8_0:
      return 34.0 / 32.0;  // block_q8_0: f16 scale + 32 int8
    case KvType::kQ4_0:
      return 18.0 / 32.0;  // block_q4_0: f16 scale + 32 nibbles
    case KvType::kFp8:
      return 1.0;
  }
  return 2.0;
}

double KvFootprint::bytes_per_sequence(uint64_t context) const {
  const uint64_t sliding_tokens =
      sliding_window == 0 ? context : std::min<uint64_t>(context, sliding_window);
  return full_bytes_per_token * static_cast<double>(context) +
         sliding_bytes_per_token * static_cast<double>(sliding_tokens) +
         static_cast<double>(state_bytes_per_sequence);
}

KvFootprint kv_footprint(const ModelFacts& model, KvType type) {
  const double element = kv_bytes_per_element(type);
  KvFootprint kv;
  kv.sliding_window = model.sliding_window;
  for (const auto& layer : model.layers) {
    switch (layer.kind) {
      case LayerKind::kFullAttention:
      case LayerKind::kSlidingAttention: {
        // Per token: n_head_kv x (key_length + value_length) elements (llama.cpp n_embd_k_gqa +
        // n_embd_v_gqa), or one MLA latent of kv_lora_rank + rope dims with no V.
        const bool sliding = layer.kind == LayerKind::kSlidingAttention;
        const double elements =
            model.mla ? double(model.kv_lora_rank) + model.rope_dim
                      : double(layer.n_head_kv) *
                            (sliding ? double(model.key_length_swa) + model.value_length_swa
                                     : double(model.key_length) + model.value_length);
        (sliding ? kv.sliding_bytes_per_token : kv.full_bytes_per_token) += elements * element;
        break;
      }
      case LayerKind::kRecurrent:
        kv.state_bytes_per_sequence += model.recurrent_state_elements * 4;  // f32
        break;
      case LayerKind::kNone:
        break;
    }
  }
  return kv;
}

}  // namespace switchyard::plan
