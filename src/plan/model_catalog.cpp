#include "plan/model_catalog.h"

#include "plan/hf_config.h"

namespace switchyard::plan {

const std::vector<CatalogEntry>& model_catalog() {
  static const std::vector<CatalogEntry> entries{
      {"qwen3-32b", "Qwen/Qwen3-32B",
       R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "head_dim": 128,
           "hidden_size": 5120, "intermediate_size": 25600, "max_position_embeddings": 40960,
           "num_attention_heads": 64, "num_hidden_layers": 64, "num_key_value_heads": 8,
           "vocab_size": 151936})"},
      {"llama-3.1-70b", "meta-llama/Llama-3.1-70B-Instruct",
       R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
           "intermediate_size": 28672, "max_position_embeddings": 131072,
           "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8,
           "vocab_size": 128256})"},
      {"qwen3-next-80b-a3b", "Qwen/Qwen3-Next-80B-A3B-Instruct",
       R"({"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next",
           "full_attention_interval": 4, "head_dim": 256, "hidden_size": 2048,
           "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
           "linear_num_value_heads": 32, "linear_value_head_dim": 128,
           "max_position_embeddings": 262144, "num_attention_heads": 16, "num_hidden_layers": 48,
           "num_key_value_heads": 2, "partial_rotary_factor": 0.25, "vocab_size": 151936})"},
  };
  return entries;
}

std::optional<Result<ModelFacts>> catalog_model(std::string_view name) {
  for (const auto& entry : model_catalog()) {
    if (entry.name != name) continue;
    auto facts = facts_from_hf_config(entry.config_json, std::string(entry.repository));
    if (facts) {
      facts->format = "catalog";
      facts->name = std::string(entry.name);
      facts->notes.push_back("built-in catalog: the architecture of " +
                             std::string(entry.repository) + "'s config.json");
    }
    return facts;
  }
  return std::nullopt;
}

std::string catalog_names() {
  std::string out;
  for (const auto& entry : model_catalog())
    out += (out.empty() ? "" : ", ") + std::string(entry.name);
  return out;
}

}  // namespace switchyard::plan
