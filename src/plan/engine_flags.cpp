#include "plan/engine_flags.h"

#include <fmt/format.h>

#include <algorithm>

#include <filesystem>

namespace switchyard::plan {
namespace {

// Paths with spaces or quotes are single-quoted for the shell.
std::string shell_word(const std::string& word) {
  if (word.find_first_of(" \t'\"\\$`;&|<>()*?") == std::string::npos) return word;
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string yaml_quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string llamacpp_command(const LaunchInput& in) {
  const InstanceLayout& layout = *in.layout;
  // llama.cpp can only load a GGUF; a config.json plan still shows the flags.
  const std::string model = in.model->format == "gguf" ? shell_word(in.model_path) : "MODEL.gguf";
  // -c is the whole cache, shared by the -np slots: each slot gets c / np tokens.
  std::string cmd = fmt::format("llama-server -m {} --port ${{PORT}} -ngl {} -c {} -np {}", model,
                                in.gpu_layers ? std::to_string(*in.gpu_layers) : std::string("999"),
                                in.context * layout.slots_per_instance, layout.slots_per_instance);
  if (in.n_ubatch != 512) cmd += fmt::format(" -ub {}", in.n_ubatch);
  if (layout.gpus_per_instance == 1) {
    cmd += " --split-mode none";
  } else {
    cmd += layout.layout == Layout::kTensorParallel ? " --split-mode row" : " --split-mode layer";
    std::string split;
    const bool mixed = in.gpus != nullptr && in.gpus->mixed();
    for (uint32_t i = 0; i < layout.gpus_per_instance; ++i) {
      // Whole GiB: llama.cpp takes the proportions, not the sizes.
      const uint64_t share = mixed ? std::max<uint64_t>(1, in.gpus->cards[i] >> 30) : 1;
      split += (i ? "," : "") + std::to_string(share);
    }
    cmd += " --tensor-split " + split;
  }
  if (in.kv_type == KvType::kQ8_0 || in.kv_type == KvType::kQ4_0) {
    const auto type = kv_type_name(in.kv_type);
    cmd += fmt::format(" -ctk {} -ctv {}", type, type);
  }
  // The compute buffers are planned with flash attention (a quantized V cache needs it too):
  // without it llama.cpp materialises the KQ matrix, n_head x n_ctx x n_ubatch x 4 B per card.
  cmd += " -fa on";
  return cmd;
}

std::string vllm_command(const LaunchInput& in) {
  const InstanceLayout& layout = *in.layout;
  const std::string model =
      in.model->format == "gguf" || in.model->format == "catalog"  // a file, a repository
          ? shell_word(in.model_path)
          : shell_word(std::filesystem::path(in.model_path).parent_path().string());
  std::string cmd = fmt::format(
      "vllm serve {} --port ${{PORT}} --max-model-len {} --max-num-seqs {} "
      "--gpu-memory-utilization {:g}",
      model, in.context, layout.slots_per_instance, in.vllm_memory_fraction);
  if (layout.gpus_per_instance > 1) {
    cmd += layout.layout == Layout::kTensorParallel ? " --tensor-parallel-size "
                                                    : " --pipeline-parallel-size ";
    cmd += std::to_string(layout.gpus_per_instance);
  }
  cmd += in.kv_type == KvType::kFp8 ? " --kv-cache-dtype fp8" : " --kv-cache-dtype auto";
  return cmd;
}

std::string fleet_yaml(const LaunchInput& in, const std::string& command) {
  const InstanceLayout& layout = *in.layout;
  const std::string& name = in.model->name;
  std::string yaml =
      fmt::format("models:\n  - name: {}\n    aliases: [default]\ninstances:\n", name);
  for (uint32_t i = 0; i < layout.instances; ++i) {
    const uint32_t first = i * layout.gpus_per_instance;
    std::string gpus;
    for (uint32_t g = 0; g < layout.gpus_per_instance; ++g) {
      gpus += (g ? "," : "") + std::to_string(first + g);
    }
    const std::string instance =
        layout.gpus_per_instance == 1
            ? fmt::format("gpu{}", first)
            : fmt::format("gpu{}-{}", first, first + layout.gpus_per_instance - 1);
    yaml += fmt::format(
        "  - name: {}\n    model: {}\n    command: {}\n    env: {{HIP_VISIBLE_DEVICES: \"{}\"}}\n"
        "    slots: {}\n",
        instance, name, yaml_quoted(command), gpus, layout.slots_per_instance);
  }
  return yaml;
}

}  // namespace

std::optional<Engine> parse_engine(std::string_view text) {
  if (text == "llamacpp" || text == "llama.cpp") return Engine::kLlamaCpp;
  if (text == "vllm") return Engine::kVllm;
  return std::nullopt;
}

std::string_view engine_name(Engine engine) {
  return engine == Engine::kVllm ? "vllm" : "llamacpp";
}

bool engine_supports(Engine engine, KvType type) {
  if (engine == Engine::kVllm) return type == KvType::kF16 || type == KvType::kFp8;
  return type != KvType::kFp8;
}

LaunchPlan launch_plan(const LaunchInput& input) {
  LaunchPlan plan;
  if (engine_supports(Engine::kLlamaCpp, input.kv_type)) plan.llamacpp = llamacpp_command(input);
  if (engine_supports(Engine::kVllm, input.kv_type)) plan.vllm = vllm_command(input);
  const auto& command = input.engine == Engine::kVllm ? plan.vllm : plan.llamacpp;
  plan.fleet_yaml = fleet_yaml(input, command.value_or(""));
  return plan;
}

}  // namespace switchyard::plan
