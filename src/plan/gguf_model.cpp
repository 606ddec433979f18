#include "plan/gguf_model.h"

#include <algorithm>

#include <fmt/format.h>

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace switchyard::plan {
namespace {

// llama.cpp allows 512 layers (LLAMA_MAX_LAYERS in llama-hparams.h); a generous bound keeps a
// hostile block_count from sizing a huge vector.
constexpr uint64_t kMaxLayers = 4096;

// Sliding-window layer patterns that llama.cpp hard-codes per architecture instead of reading
// them from the file (src/llama-model.cpp, load_hparams: hparams.set_swa_pattern(n) for GEMMA2 2,
// GEMMA3 6, GEMMA3N 5, COHERE2 4; LLAMA4 uses chunked attention with n_swa = 8192 and pattern 4).
// With pattern n, layer il is sliding iff il % n < n - 1 (llama_hparams::set_swa_pattern).
struct SwaDefault {
  std::string_view arch;
  uint32_t pattern;
  uint32_t window;  // used when the file has no sliding_window key; 0 = the key is required
};
constexpr SwaDefault kSwaDefaults[] = {
    {"gemma2", 2, 4096}, {"gemma3", 6, 0},    {"gemma3n", 5, 0},
    {"cohere2", 4, 0},   {"llama4", 4, 8192},
};

// Architectures whose linear-attention (recurrent) layers llama.cpp places with
// full_attention_interval, defaulting to 4 (src/models/qwen3next.cpp, qwen35.cpp, qwen35moe.cpp:
// recurrent iff (il + 1) % full_attn_interval != 0).
constexpr std::string_view kIntervalArchs[] = {"qwen3next", "qwen35", "qwen35moe"};

class Metadata {
 public:
  Metadata(const GgufFile& file, std::string arch) : file_(file), arch_(std::move(arch)) {}

  std::string key(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }
  const GgufValue* find(std::string_view suffix) const { return file_.find(key(suffix)); }

  // An optional unsigned integer of any integer width.
  Result<std::optional<uint64_t>> uint(std::string_view suffix) const {
    const GgufValue* value = find(suffix);
    if (value == nullptr) return std::optional<uint64_t>{};
    const auto v = value->as_uint();
    if (!v) return Error{"GGUF: " + key(suffix) + " must be a non-negative integer"};
    return std::optional<uint64_t>{*v};
  }

  // A value given either once for all layers or as an array with one entry per layer.
  Result<std::optional<std::vector<uint64_t>>> per_layer(std::string_view suffix,
                                                         uint64_t n_layer) const {
    const GgufValue* value = find(suffix);
    if (value == nullptr) return std::optional<std::vector<uint64_t>>{};
    if (!value->is_array()) {
      const auto v = value->as_uint();
      if (!v) return Error{"GGUF: " + key(suffix) + " must be a non-negative integer"};
      return std::optional{std::vector<uint64_t>(n_layer, *v)};
    }
    auto values = value->as_uint_array();
    if (!values) {
      return Error{"GGUF: " + key(suffix) + " must be an array of non-negative integers"};
    }
    if (values->size() != n_layer) {
      return Error{"GGUF: " + key(suffix) + " has " + std::to_string(values->size()) +
                   " entries but the model has " + std::to_string(n_layer) + " layers"};
    }
    return std::optional{std::move(*values)};
  }

 private:
  const GgufFile& file_;
  std::string arch_;
};

// A uint32 field from an optional value, rejecting values that do not fit.
Result<uint32_t> narrow(const Metadata& md, std::string_view suffix, std::optional<uint64_t> v,
                        uint32_t fallback) {
  if (!v) return fallback;
  if (*v > 0xffffffffu) return Error{"GGUF: " + md.key(suffix) + " is out of range"};
  return static_cast<uint32_t>(*v);
}

#define SY_TRY_ASSIGN(lhs, expr)                  \
  auto lhs##_result = (expr);                     \
  if (!lhs##_result) return lhs##_result.error(); \
  auto lhs = std::move(*lhs##_result)

// Marks the sliding-window layers. Returns the window, 0 when the model has none.
Result<uint32_t> sliding_layers(const Metadata& md, const std::string& arch, uint64_t n_layer,
                                std::vector<bool>& swa, std::vector<std::string>& notes) {
  SY_TRY_ASSIGN(window_key, md.uint("attention.sliding_window"));
  const SwaDefault* known = nullptr;
  for (const auto& d : kSwaDefaults) {
    if (d.arch == arch) known = &d;
  }
  uint64_t window = window_key.value_or(known ? known->window : 0);
  if (window == 0) return 0u;
  if (window > 0xffffffffu) {
    return Error{"GGUF: " + md.key("attention.sliding_window") + " is out of range"};
  }

  const GgufValue* pattern = md.find("attention.sliding_window_pattern");
  if (pattern != nullptr && pattern->is_array()) {
    const auto flags = pattern->as_uint_array();
    if (!flags || flags->size() != n_layer) {
      return Error{"GGUF: " + md.key("attention.sliding_window_pattern") +
                   " must hold one bool per layer (" + std::to_string(n_layer) + ")"};
    }
    std::transform(flags->begin(), flags->end(), swa.begin(), [](uint64_t f) { return f != 0; });
    return static_cast<uint32_t>(window);
  }
  uint64_t n = 0;
  if (pattern != nullptr) {
    SY_TRY_ASSIGN(p, md.uint("attention.sliding_window_pattern"));
    n = *p;
  } else if (known != nullptr) {
    n = known->pattern;
  } else {
    // llama.cpp does not window such layers either: it reads the window only for the
    // architectures it knows the pattern of.
    notes.push_back(md.key("attention.sliding_window") + " is " + std::to_string(window) +
                    " but the file gives no layer pattern for '" + arch +
                    "': every layer is counted at full context (an upper bound)");
    return 0u;
  }
  for (uint64_t il = 0; il < n_layer; ++il) swa[il] = n == 0 || il % n < n - 1;
  return static_cast<uint32_t>(window);
}

// Marks the recurrent layers and returns the state elements each holds per sequence, following
// llama.cpp src/llama-hparams.cpp: n_embd_r() (rolling conv state / RWKV token shift) plus
// n_embd_s() (SSM / WKV state), both stored as f32.
Result<uint64_t> recurrent_layers(const Metadata& md, const std::string& arch, uint64_t n_layer,
                                  uint64_t n_embd, const std::vector<uint64_t>& n_head_kv,
                                  std::vector<bool>& recurrent) {
  SY_TRY_ASSIGN(d_conv, md.uint("ssm.conv_kernel"));
  SY_TRY_ASSIGN(d_inner, md.uint("ssm.inner_size"));
  SY_TRY_ASSIGN(d_state, md.uint("ssm.state_size"));
  SY_TRY_ASSIGN(n_group, md.uint("ssm.group_count"));
  SY_TRY_ASSIGN(wkv_head_size, md.uint("wkv.head_size"));
  SY_TRY_ASSIGN(token_shift, md.uint("token_shift_count"));
  SY_TRY_ASSIGN(l_cache, md.uint("shortconv.l_cache"));
  SY_TRY_ASSIGN(interval, md.uint("full_attention_interval"));

  const std::pair<std::string_view, std::optional<uint64_t>> dims[] = {
      {"ssm.conv_kernel", d_conv},      {"ssm.inner_size", d_inner},
      {"ssm.state_size", d_state},      {"ssm.group_count", n_group},
      {"wkv.head_size", wkv_head_size}, {"token_shift_count", token_shift},
      {"shortconv.l_cache", l_cache}};
  for (const auto& [key, value] : dims) {
    if (value.value_or(0) > 0xffffffffu) return Error{"GGUF: " + md.key(key) + " is out of range"};
  }
  // A sum of products of the values above, or false when it overflows 64 bits.
  auto checked = [](std::initializer_list<std::initializer_list<uint64_t>> terms, uint64_t& out) {
    uint64_t sum = 0;
    for (const auto& factors : terms) {
      uint64_t product = 1;
      for (uint64_t f : factors) {
        if (__builtin_mul_overflow(product, f, &product)) return false;
      }
      if (__builtin_add_overflow(sum, product, &sum)) return false;
    }
    out = sum;
    return true;
  };

  uint64_t elements = 0;
  bool all_layers = false;
  if (wkv_head_size && *wkv_head_size != 0) {
    // RWKV: n_embd_r = token_shift_count * n_embd, n_embd_s = n_embd * wkv_head_size.
    if (!checked({{token_shift.value_or(2), n_embd}, {n_embd, *wkv_head_size}}, elements)) {
      return Error{"GGUF: RWKV state size overflows"};
    }
    all_layers = true;
  } else if (l_cache && *l_cache != 0) {
    // LFM2 short convolution: n_embd_r = n_embd * (l_cache - 1); no SSM state.
    if (!checked({{n_embd, *l_cache - 1}}, elements)) return Error{"GGUF: conv state overflows"};
  } else if (d_inner || d_state || d_conv) {
    if (!d_inner || !d_state) {
      return Error{"GGUF: " + md.key("ssm.inner_size") + " and " + md.key("ssm.state_size") +
                   " are both needed for a model with SSM layers"};
    }
    // Mamba / Mamba2 / gated delta net: n_embd_r = (d_conv - 1) * (d_inner + 2 * n_group *
    // d_state), n_embd_s = d_state * d_inner.
    const uint64_t conv = d_conv.value_or(0) > 0 ? *d_conv - 1 : 0;
    if (!checked({{conv, *d_inner}, {conv, 2, n_group.value_or(0), *d_state}, {*d_state, *d_inner}},
                 elements)) {
      return Error{"GGUF: SSM state size overflows"};
    }
  } else {
    return uint64_t{0};
  }
  // Bytes are elements x 4 per layer, times layers and sequences: keep far from 2^64.
  if (elements > (uint64_t{1} << 48)) {
    return Error{"GGUF: the recurrent state size is out of range"};
  }

  bool interval_arch = false;
  for (auto a : kIntervalArchs) interval_arch = interval_arch || a == arch;
  if (all_layers) {
    recurrent.assign(n_layer, true);
  } else if (interval || interval_arch) {
    const uint64_t k = interval.value_or(4);
    if (k == 0) return Error{"GGUF: " + md.key("full_attention_interval") + " must not be 0"};
    for (uint64_t il = 0; il < n_layer; ++il) recurrent[il] = (il + 1) % k != 0;
  } else {
    // Jamba, Falcon-H1, Granite hybrid, Nemotron-H, LFM2: layers without KV heads are the
    // recurrent ones; a pure Mamba model has no KV heads at all.
    for (uint64_t il = 0; il < n_layer; ++il) recurrent[il] = n_head_kv[il] == 0;
  }
  return elements;
}

// Adds one file's tensors to where llama.cpp places them: "blk.N." to layer N, "output." and
// "output_norm." to the output layer, anything else (token_embd, rope tables) to the CPU, where
// llama.cpp always keeps the input layer.
void tally_tensors(const GgufFile& file, ModelFacts& facts) {
  const size_t n_layer = facts.layers.size();
  facts.layer_weights.resize(n_layer, 0);
  for (const auto& t : file.tensors) {
    const std::string_view name = t.name;
    if (name.starts_with("blk.")) {
      uint64_t il = 0;
      size_t i = 4;
      while (i < name.size() && name[i] >= '0' && name[i] <= '9' && il <= n_layer) {
        il = il * 10 + static_cast<uint64_t>(name[i++] - '0');
      }
      if (i > 4 && i < name.size() && name[i] == '.' && il < n_layer) {
        facts.layer_weights[il] += t.bytes;
        continue;
      }
    }
    if (name.starts_with("output.") || name.starts_with("output_norm.")) {
      facts.output_weights += t.bytes;
    } else {
      facts.input_weights += t.bytes;
    }
  }
}

// Tied embeddings: without output.weight llama.cpp loads token_embd a second time as the output
// matrix, on the output layer's device.
void tie_output(const std::vector<const GgufFile*>& files, ModelFacts& facts) {
  bool has_output = false;
  uint64_t embd = 0;
  for (const GgufFile* f : files) {
    for (const auto& t : f->tensors) {
      has_output = has_output || t.name == "output.weight";
      if (t.name == "token_embd.weight") embd = t.bytes;
    }
  }
  if (!has_output) facts.output_weights += embd;
}

}  // namespace

Result<ModelFacts> facts_from_gguf(const GgufFile& file, const std::string& source) {
  ModelFacts facts;
  facts.source = source;
  facts.format = "gguf";
  facts.name = model_name_from_path(source);
  facts.weights_bytes = file.tensor_bytes;

  const GgufValue* arch_value = file.find("general.architecture");
  if (arch_value == nullptr) return Error{"GGUF: general.architecture is missing"};
  const std::string* arch = arch_value->as_string();
  if (arch == nullptr || arch->empty() || arch->size() > 128) {
    return Error{"GGUF: general.architecture must be a short string"};
  }
  facts.architecture = *arch;
  const Metadata md(file, *arch);

  SY_TRY_ASSIGN(block_count, md.uint("block_count"));
  if (!block_count) return Error{"GGUF: " + md.key("block_count") + " is missing"};
  const uint64_t n_layer = *block_count;
  if (n_layer == 0 || n_layer > kMaxLayers) {
    return Error{"GGUF: " + md.key("block_count") + " is " + std::to_string(n_layer) + " (1 to " +
                 std::to_string(kMaxLayers) + " expected)"};
  }
  SY_TRY_ASSIGN(context, md.uint("context_length"));
  facts.context_length = context.value_or(0);
  SY_TRY_ASSIGN(embd, md.uint("embedding_length"));
  const uint64_t n_embd = embd.value_or(0);
  if (n_embd > 0xffffffffu) {
    return Error{"GGUF: " + md.key("embedding_length") + " is out of range"};
  }
  facts.n_embd = static_cast<uint32_t>(n_embd);

  SY_TRY_ASSIGN(head_count, md.per_layer("attention.head_count", n_layer));
  const std::vector<uint64_t> n_head = head_count.value_or(std::vector<uint64_t>(n_layer, 0));
  SY_TRY_ASSIGN(head_count_kv, md.per_layer("attention.head_count_kv", n_layer));
  // Without head_count_kv the model does not use GQA: one KV head per attention head (gguf.md).
  const std::vector<uint64_t> n_head_kv = head_count_kv.value_or(n_head);
  for (uint64_t v : n_head_kv) {
    if (v > 0xffffu) {
      return Error{"GGUF: " + md.key("attention.head_count_kv") + " is out of range"};
    }
  }

  // key_length/value_length default to n_embd / n_head (gguf.md; llama.cpp uses layer 0's head
  // count, the first non-zero one here so hybrids starting with a recurrent layer work).
  uint64_t head0 = 0;
  for (uint64_t h : n_head) {
    if (h != 0) {
      head0 = h;
      break;
    }
  }
  const uint64_t derived = head0 != 0 ? n_embd / head0 : 0;
  facts.n_head = static_cast<uint32_t>(std::min<uint64_t>(head0, 0xffffu));
  SY_TRY_ASSIGN(ff, md.per_layer("feed_forward_length", n_layer));
  for (uint64_t v : ff.value_or(std::vector<uint64_t>{})) {
    facts.n_ff =
        static_cast<uint32_t>(std::max<uint64_t>(facts.n_ff, std::min<uint64_t>(v, 1u << 24)));
  }
  // MoE: each token goes through expert_used_count experts of expert_feed_forward_length.
  SY_TRY_ASSIGN(expert_ff, md.uint("expert_feed_forward_length"));
  SY_TRY_ASSIGN(experts_used, md.uint("expert_used_count"));
  if (expert_ff && experts_used) {
    const uint64_t moe =
        std::min<uint64_t>(*expert_ff, 1u << 24) * std::min<uint64_t>(*experts_used, 256);
    facts.n_ff = static_cast<uint32_t>(std::max<uint64_t>(facts.n_ff, moe));
  }
  // The vocabulary: the tokenizer's token list (its length is kept even when the strings are
  // skipped), else the output matrix's rows.
  if (const GgufValue* tokens = file.find("tokenizer.ggml.tokens"); tokens && tokens->is_array()) {
    facts.n_vocab = tokens->array_length;
  }
  for (const auto& t : file.tensors) {
    if (facts.n_vocab == 0 && (t.name == "output.weight" || t.name == "token_embd.weight") &&
        t.dims.size() == 2) {
      facts.n_vocab = t.dims[1];
    }
  }
  SY_TRY_ASSIGN(key_length, md.uint("attention.key_length"));
  SY_TRY_ASSIGN(value_length, md.uint("attention.value_length"));
  SY_TRY_ASSIGN(k, narrow(md, "attention.key_length", key_length, static_cast<uint32_t>(derived)));
  SY_TRY_ASSIGN(v,
                narrow(md, "attention.value_length", value_length, static_cast<uint32_t>(derived)));
  facts.key_length = k;
  facts.value_length = v;
  SY_TRY_ASSIGN(key_length_swa, md.uint("attention.key_length_swa"));
  SY_TRY_ASSIGN(value_length_swa, md.uint("attention.value_length_swa"));
  SY_TRY_ASSIGN(k_swa, narrow(md, "attention.key_length_swa", key_length_swa, k));
  SY_TRY_ASSIGN(v_swa, narrow(md, "attention.value_length_swa", value_length_swa, v));
  facts.key_length_swa = k_swa;
  facts.value_length_swa = v_swa;

  // MLA as llama.cpp reads it (src/models/deepseek2.cpp; llama_hparams::is_mla() needs both
  // key_length_mla and value_length_mla). Since ggml-org/llama.cpp PR #19067 the cache holds only
  // the compressed latent (kv_lora_rank) plus the shared RoPE key (rope.dimension_count) per token.
  SY_TRY_ASSIGN(kv_lora_rank, md.uint("attention.kv_lora_rank"));
  SY_TRY_ASSIGN(key_length_mla, md.uint("attention.key_length_mla"));
  SY_TRY_ASSIGN(value_length_mla, md.uint("attention.value_length_mla"));
  SY_TRY_ASSIGN(rope_dims, md.uint("rope.dimension_count"));
  // Rotary dimensions per head; fewer than the head's when RoPE is partial (Qwen3-Next: 64 of 256).
  SY_TRY_ASSIGN(rope_all, narrow(md, "rope.dimension_count", rope_dims, 0));
  facts.rope_dim = rope_all;
  if (kv_lora_rank && *kv_lora_rank != 0 && key_length_mla && *key_length_mla != 0 &&
      value_length_mla && *value_length_mla != 0) {
    SY_TRY_ASSIGN(rank, narrow(md, "attention.kv_lora_rank", kv_lora_rank, 0));
    facts.mla = true;
    facts.kv_lora_rank = rank;
    if (rope_all == 0) {
      facts.notes.push_back(md.key("rope.dimension_count") +
                            " is missing: the MLA latent is counted without a RoPE part");
    }
  }

  std::vector<bool> swa(n_layer, false);
  SY_TRY_ASSIGN(window, sliding_layers(md, *arch, n_layer, swa, facts.notes));
  facts.sliding_window = window;

  std::vector<bool> recurrent(n_layer, false);
  SY_TRY_ASSIGN(state, recurrent_layers(md, *arch, n_layer, n_embd, n_head_kv, recurrent));
  facts.recurrent_state_elements = state;

  uint32_t no_cache = 0;
  facts.layers.resize(n_layer);
  for (uint64_t il = 0; il < n_layer; ++il) {
    auto& layer = facts.layers[il];
    layer.n_head_kv = static_cast<uint32_t>(n_head_kv[il]);
    if (recurrent[il]) {
      layer.kind = LayerKind::kRecurrent;
    } else if (n_head_kv[il] == 0) {
      layer.kind = LayerKind::kNone;
      ++no_cache;
    } else {
      layer.kind = swa[il] ? LayerKind::kSlidingAttention : LayerKind::kFullAttention;
    }
  }
  if (no_cache > 0) {
    facts.notes.push_back(
        std::to_string(no_cache) +
        " layers have head_count_kv 0 and no recurrent state: they keep no cache");
  }
  tally_tensors(file, facts);
  tie_output({&file}, facts);
  const bool needs_heads =
      facts.count(LayerKind::kFullAttention) + facts.count(LayerKind::kSlidingAttention) > 0;
  if (needs_heads && !facts.mla && (facts.key_length == 0 || facts.value_length == 0)) {
    return Error{"GGUF: " + md.key("attention.key_length") +
                 " is missing and cannot be derived from embedding_length / head_count"};
  }
  return facts;
}

Result<ModelFacts> load_gguf_model(const std::filesystem::path& path) {
  auto first = read_gguf_file(path);
  if (!first) return first.error();
  const GgufValue* count_value = first->find("split.count");
  const uint64_t count = count_value ? count_value->as_uint().value_or(0) : 1;
  if (count == 0) return Error{path.string() + ": GGUF: split.count must be a positive integer"};
  if (count == 1) return facts_from_gguf(*first, path.string());

  // split.no is 0-based; shard file names count from 1.
  const auto shard_name = parse_shard_name(path.filename().string());
  if (!shard_name) {
    return Error{path.string() + ": the model is split into " + std::to_string(count) +
                 " files (split.count) but the name is not like " +
                 fmt::format("'model-00001-of-{:05}.gguf'", count)};
  }
  if (shard_name->count != count) {
    return Error{path.string() + ": split.count is " + std::to_string(count) +
                 " but the file name says " + std::to_string(shard_name->count)};
  }
  const std::string& prefix = shard_name->prefix;
  const auto dir = path.parent_path();

  std::optional<GgufFile> head;
  uint64_t weights = 0;
  uint64_t tensors = 0;
  std::vector<GgufFile> shards;
  for (uint64_t i = 1; i <= count; ++i) {
    const auto shard_path = dir / fmt::format("{}-{:05}-of-{:05}.gguf", prefix, i, count);
    auto shard = read_gguf_file(shard_path);
    if (!shard) {
      return Error{"shard " + std::to_string(i) + " of " + std::to_string(count) + ": " +
                   shard.error().message};
    }
    const GgufValue* no = shard->find("split.no");
    if (no != nullptr && no->as_uint() != i - 1) {
      return Error{shard_path.string() + ": split.no is not " + std::to_string(i - 1)};
    }
    if (__builtin_add_overflow(weights, shard->tensor_bytes, &weights)) {
      return Error{"the shards' tensor sizes overflow"};
    }
    tensors += shard->tensors.size();
    shards.push_back(std::move(*shard));
  }
  head = shards.front();
  const GgufValue* total_tensors = head->find("split.tensors.count");
  if (total_tensors != nullptr && total_tensors->as_uint() != tensors) {
    return Error{path.string() + ": split.tensors.count says " +
                 std::to_string(total_tensors->as_uint().value_or(0)) + " tensors but the " +
                 std::to_string(count) + " shards hold " + std::to_string(tensors)};
  }
  auto facts = facts_from_gguf(*head, path.string());
  if (!facts) return facts.error();
  facts->weights_bytes = weights;
  facts->files = static_cast<uint32_t>(count);
  // Placement over every shard, not only the first.
  facts->layer_weights.clear();
  facts->input_weights = facts->output_weights = 0;
  std::vector<const GgufFile*> all;
  for (const auto& shard : shards) {
    tally_tensors(shard, *facts);
    all.push_back(&shard);
  }
  tie_output(all, *facts);
  return facts;
}

}  // namespace switchyard::plan

#undef SY_TRY_ASSIGN
