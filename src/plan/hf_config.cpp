#include "plan/hf_config.h"

#include <algorithm>

#include <boost/json.hpp>

#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>
#include <vector>

namespace switchyard::plan {
namespace {

namespace json = boost::json;

constexpr uint64_t kMaxLayers = 4096;
constexpr uint64_t kMaxConfigBytes = 16u << 20;

// Sliding-window layer patterns for configs that predate the layer_types list. The patterns are
// the ones llama.cpp hard-codes for the same architectures (src/llama-model.cpp: GEMMA2 2,
// GEMMA3 6, COHERE2 4); layer i slides iff i % n < n - 1, which is Hugging Face's
// `bool((layer_idx + 1) % sliding_window_pattern)` for these models.
struct SwaPattern {
  std::string_view model_type;
  uint64_t pattern;
};
constexpr SwaPattern kSwaPatterns[] = {
    {"gemma2", 2}, {"gemma3", 6}, {"gemma3_text", 6}, {"cohere2", 4}};

// Looks fields up in text_config first, then at the top level.
class Config {
 public:
  explicit Config(const json::object& top) : top_(top) {
    if (const auto* text = top.if_contains("text_config"); text && text->is_object()) {
      text_ = &text->as_object();
    }
  }

  const json::value* find(std::string_view name) const {
    if (text_ != nullptr) {
      if (const auto* v = text_->if_contains(name); v && !v->is_null()) return v;
    }
    const auto* v = top_.if_contains(name);
    return v && !v->is_null() ? v : nullptr;
  }

  Result<std::optional<uint64_t>> uint(std::string_view name) const {
    const json::value* v = find(name);
    if (v == nullptr) return std::optional<uint64_t>{};
    if (v->is_uint64()) return std::optional<uint64_t>{v->as_uint64()};
    if (v->is_int64() && v->as_int64() >= 0) {
      return std::optional<uint64_t>{static_cast<uint64_t>(v->as_int64())};
    }
    return Error{"config.json: " + std::string(name) + " must be a non-negative integer"};
  }

  std::string string(std::string_view name) const {
    const json::value* v = find(name);
    return v && v->is_string() ? std::string(v->as_string()) : std::string();
  }

  std::optional<bool> boolean(std::string_view name) const {
    const json::value* v = find(name);
    if (v && v->is_bool()) return v->as_bool();
    return std::nullopt;
  }

 private:
  const json::object& top_;
  const json::object* text_ = nullptr;
};

#define SY_TRY_ASSIGN(lhs, expr)                  \
  auto lhs##_result = (expr);                     \
  if (!lhs##_result) return lhs##_result.error(); \
  auto lhs = std::move(*lhs##_result)

Result<uint32_t> fits_u32(std::string_view name, uint64_t v) {
  if (v > 0xffffffffu) return Error{"config.json: " + std::string(name) + " is out of range"};
  return static_cast<uint32_t>(v);
}

// The kinds of layer_types entries (transformers' configuration_*.py layer_types values).
Result<LayerKind> layer_kind(const json::value& v, size_t index) {
  if (!v.is_string()) {
    return Error{"config.json: layer_types[" + std::to_string(index) + "] is not a string"};
  }
  const std::string_view s = v.as_string();
  if (s == "full_attention" || s == "attention") return LayerKind::kFullAttention;
  if (s == "sliding_attention" || s == "chunked_attention") return LayerKind::kSlidingAttention;
  if (s == "linear_attention") return LayerKind::kRecurrent;
  return Error{"config.json: layer_types[" + std::to_string(index) + "] is '" + std::string(s) +
               "', a layer kind this planner does not size; use the model's GGUF instead"};
}

Result<std::string> read_text(const std::filesystem::path& path, uint64_t limit) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return Error{path.string() + ": " + ec.message()};
  if (size > limit) return Error{path.string() + ": larger than a config file can be"};
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path.string() + ": cannot open for reading"};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

Result<ModelFacts> facts_from_hf_config(std::string_view json_text, const std::string& source) {
  std::error_code ec;
  json::value root = json::parse(json_text, ec);
  if (ec) return Error{"config.json: not valid JSON: " + ec.message()};
  if (!root.is_object()) return Error{"config.json: the top level is not an object"};
  const Config config(root.as_object());

  ModelFacts facts;
  facts.source = source;
  facts.format = "hf-config";
  facts.name = model_name_from_path(source);
  facts.architecture = config.string("model_type");
  if (const auto* archs = root.as_object().if_contains("architectures");
      facts.architecture.empty() && archs && archs->is_array() && !archs->as_array().empty() &&
      archs->as_array()[0].is_string()) {
    facts.architecture = std::string(archs->as_array()[0].as_string());
  }

  SY_TRY_ASSIGN(layers, config.uint("num_hidden_layers"));
  if (!layers) return Error{"config.json: num_hidden_layers is missing"};
  if (*layers == 0 || *layers > kMaxLayers) {
    return Error{"config.json: num_hidden_layers is " + std::to_string(*layers)};
  }
  const uint64_t n_layer = *layers;
  SY_TRY_ASSIGN(context, config.uint("max_position_embeddings"));
  facts.context_length = context.value_or(0);

  SY_TRY_ASSIGN(hidden, config.uint("hidden_size"));
  SY_TRY_ASSIGN(heads, config.uint("num_attention_heads"));
  SY_TRY_ASSIGN(kv_heads, config.uint("num_key_value_heads"));
  SY_TRY_ASSIGN(head_dim, config.uint("head_dim"));
  // transformers' default: head_dim = hidden_size / num_attention_heads, and no GQA when
  // num_key_value_heads is absent.
  uint64_t dim = head_dim.value_or(0);
  if (dim == 0 && hidden && heads && *heads != 0) dim = *hidden / *heads;
  SY_TRY_ASSIGN(dim32, fits_u32("head_dim", dim));
  facts.key_length = facts.value_length = dim32;
  facts.key_length_swa = facts.value_length_swa = dim32;
  SY_TRY_ASSIGN(n_kv, fits_u32("num_key_value_heads", kv_heads.value_or(heads.value_or(0))));
  SY_TRY_ASSIGN(embd32, fits_u32("hidden_size", hidden.value_or(0)));
  SY_TRY_ASSIGN(heads32, fits_u32("num_attention_heads", heads.value_or(0)));
  facts.n_embd = embd32;
  facts.n_head = heads32;
  SY_TRY_ASSIGN(vocab, config.uint("vocab_size"));
  facts.n_vocab = vocab.value_or(0);
  // FFN width per token: intermediate_size, or for MoE the experts a token passes through.
  SY_TRY_ASSIGN(ffn, config.uint("intermediate_size"));
  SY_TRY_ASSIGN(moe_ffn, config.uint("moe_intermediate_size"));
  SY_TRY_ASSIGN(experts_used, config.uint("num_experts_per_tok"));
  uint64_t ff = ffn.value_or(0);
  if (moe_ffn && experts_used) {
    ff = std::max(ff,
                  std::min<uint64_t>(*moe_ffn, 1u << 24) * std::min<uint64_t>(*experts_used, 256));
  }
  SY_TRY_ASSIGN(ff32, fits_u32("intermediate_size", ff));
  facts.n_ff = ff32;

  // MLA (DeepSeek V2/V3, Kimi K2): one latent of kv_lora_rank + qk_rope_head_dim per token, as
  // vLLM's MLA backends cache it.
  SY_TRY_ASSIGN(lora, config.uint("kv_lora_rank"));
  SY_TRY_ASSIGN(rope, config.uint("qk_rope_head_dim"));
  if (lora && *lora != 0) {
    SY_TRY_ASSIGN(lora32, fits_u32("kv_lora_rank", *lora));
    SY_TRY_ASSIGN(rope32, fits_u32("qk_rope_head_dim", rope.value_or(0)));
    facts.mla = true;
    facts.kv_lora_rank = lora32;
    facts.rope_dim = rope32;
  }

  // Layer kinds: layer_types when given, else full_attention_interval (Qwen3-Next: layer i is
  // full attention iff (i + 1) % interval == 0), else every layer is attention.
  std::vector<LayerKind> kinds(n_layer, LayerKind::kFullAttention);
  const json::value* layer_types = config.find("layer_types");
  SY_TRY_ASSIGN(interval, config.uint("full_attention_interval"));
  if (layer_types != nullptr) {
    if (!layer_types->is_array() || layer_types->as_array().size() != n_layer) {
      return Error{"config.json: layer_types must list one entry per layer (" +
                   std::to_string(n_layer) + ")"};
    }
    for (size_t i = 0; i < n_layer; ++i) {
      SY_TRY_ASSIGN(kind, layer_kind(layer_types->as_array()[i], i));
      kinds[i] = kind;
    }
  } else if (interval) {
    if (*interval == 0) return Error{"config.json: full_attention_interval must not be 0"};
    for (uint64_t i = 0; i < n_layer; ++i) {
      if ((i + 1) % *interval != 0) kinds[i] = LayerKind::kRecurrent;
    }
  }

  // Sliding windows: use_sliding_window: false (Qwen2) turns the window off.
  SY_TRY_ASSIGN(window, config.uint("sliding_window"));
  const bool windowed = window && *window != 0 && config.boolean("use_sliding_window") != false;
  if (windowed) {
    SY_TRY_ASSIGN(window32, fits_u32("sliding_window", *window));
    facts.sliding_window = window32;
    if (layer_types == nullptr) {
      SY_TRY_ASSIGN(pattern, config.uint("sliding_window_pattern"));
      std::optional<uint64_t> n = pattern;
      for (const auto& p : kSwaPatterns) {
        if (!n && p.model_type == facts.architecture) n = p.pattern;
      }
      for (uint64_t i = 0; i < n_layer; ++i) {
        // Without a pattern every attention layer slides (Mistral 7B v0.1 style).
        const bool slides = !n || *n == 0 || i % *n < *n - 1;
        if (slides && kinds[i] == LayerKind::kFullAttention) {
          kinds[i] = LayerKind::kSlidingAttention;
        }
      }
    }
  } else {
    for (auto& kind : kinds) {
      if (kind == LayerKind::kSlidingAttention) kind = LayerKind::kFullAttention;
    }
  }

  facts.layers.resize(n_layer);
  bool has_recurrent = false;
  for (uint64_t i = 0; i < n_layer; ++i) {
    facts.layers[i] = {kinds[i], kinds[i] == LayerKind::kRecurrent ? 0u : n_kv};
    has_recurrent = has_recurrent || kinds[i] == LayerKind::kRecurrent;
  }

  if (has_recurrent) {
    // Gated delta net state per layer per sequence: conv (kernel - 1) x (2 * key_dim * key_heads
    // + value_dim * value_heads) plus value_heads x value_dim x key_dim (vLLM
    // mamba_utils.gated_delta_net_state_shape; the same as llama.cpp's n_embd_r + n_embd_s).
    SY_TRY_ASSIGN(conv, config.uint("linear_conv_kernel_dim"));
    SY_TRY_ASSIGN(kd, config.uint("linear_key_head_dim"));
    SY_TRY_ASSIGN(nk, config.uint("linear_num_key_heads"));
    SY_TRY_ASSIGN(vd, config.uint("linear_value_head_dim"));
    SY_TRY_ASSIGN(nv, config.uint("linear_num_value_heads"));
    if (!conv || !kd || !nk || !vd || !nv) {
      return Error{
          "config.json: linear-attention layers need linear_conv_kernel_dim, "
          "linear_key_head_dim, linear_num_key_heads, linear_value_head_dim and "
          "linear_num_value_heads"};
    }
    for (uint64_t f : {*conv, *kd, *nk, *vd, *nv}) {
      if (f > (1u << 16)) return Error{"config.json: a linear-attention dimension is out of range"};
    }
    const uint64_t conv_dim = 2 * *kd * *nk + *vd * *nv;
    facts.recurrent_state_elements = (*conv > 0 ? *conv - 1 : 0) * conv_dim + *nv * *vd * *kd;
  }
  const bool has_attention =
      facts.count(LayerKind::kFullAttention) + facts.count(LayerKind::kSlidingAttention) > 0;
  if (has_attention && !facts.mla && (facts.key_length == 0 || n_kv == 0)) {
    return Error{
        "config.json: the attention geometry needs num_attention_heads, "
        "num_key_value_heads and head_dim (or hidden_size)"};
  }
  return facts;
}

Result<ModelFacts> load_hf_config(const std::filesystem::path& path) {
  const bool is_dir = std::filesystem::is_directory(path);
  const auto config_path = is_dir ? path / "config.json" : path;
  const auto dir = config_path.parent_path();
  SY_TRY_ASSIGN(text, read_text(config_path, kMaxConfigBytes));
  auto facts = facts_from_hf_config(text, config_path.string());
  if (!facts) return Error{config_path.string() + ": " + facts.error().message};

  std::error_code ec;
  const auto index_path = dir / "model.safetensors.index.json";
  const auto single_path = dir / "model.safetensors";
  if (std::filesystem::exists(index_path, ec)) {
    SY_TRY_ASSIGN(index_text, read_text(index_path, 64u << 20));
    json::value index = json::parse(index_text, ec);
    const json::value* total = nullptr;
    if (!ec && index.is_object()) {
      if (const auto* md = index.as_object().if_contains("metadata"); md && md->is_object()) {
        total = md->as_object().if_contains("total_size");
      }
    }
    if (total != nullptr && total->is_uint64()) {
      facts->weights_bytes = total->as_uint64();
    } else if (total != nullptr && total->is_int64() && total->as_int64() >= 0) {
      facts->weights_bytes = static_cast<uint64_t>(total->as_int64());
    } else {
      return Error{index_path.string() + ": metadata.total_size is missing"};
    }
  } else if (std::filesystem::exists(single_path, ec)) {
    facts->weights_bytes = std::filesystem::file_size(single_path, ec);
    if (ec) return Error{single_path.string() + ": " + ec.message()};
  }
  return facts;
}

}  // namespace switchyard::plan

#undef SY_TRY_ASSIGN
