#include "plan/plan.h"

#include <boost/json.hpp>

#include <algorithm>
#include <filesystem>
#include <ostream>
#include <system_error>
#include <variant>

#include "plan/byte_size.h"
#include "plan/gguf_model.h"
#include "plan/hf_config.h"
#include "plan/model_catalog.h"
#include "plan/plan_report.h"

namespace switchyard::plan {
namespace {

// Without --context: the trained context, capped so a 1M-token model is not planned at 1M.
constexpr uint64_t kDefaultContextCap = 32768;
constexpr double kVllmDefaultFraction = 0.9;
// llama.cpp has no utilization knob: it allocates weights, the KV cache it is told to and its
// compute buffers. The buffers (plus the GPU runtime's own context) are a stated fixed reserve.
constexpr uint64_t kLlamaCppDefaultOverhead = uint64_t{1} << 30;
constexpr uint64_t kMaxConcurrency = 1'000'000;
constexpr uint64_t kMaxContext = uint64_t{1} << 32;

// A bad-input failure: the flag or field it concerns, and what was wrong.
struct BadInput {
  std::string flag;
  std::string message;
};

Result<ModelFacts> load_model(const std::string& model) {
  const std::filesystem::path path(model);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (auto entry = catalog_model(model)) return std::move(*entry);
    return Error{"'" + model + "' is not a file, nor in the built-in catalog (" + catalog_names() +
                 ")"};
  }
  const bool config = std::filesystem::is_directory(path, ec) || path.extension() == ".json";
  auto facts = config ? load_hf_config(path) : load_gguf_model(path);
  return facts;
}

// Validates the options and assembles everything but the topology.
std::variant<PlanReport, BadInput> prepare(const PlanOptions& o) {
  PlanReport r;
  const auto engine = parse_engine(o.engine);
  if (!engine) return BadInput{"--engine", "'" + o.engine + "' is not llamacpp or vllm"};
  r.engine = *engine;
  const auto kv_type = parse_kv_type(o.kv_type);
  if (!kv_type) return BadInput{"--kv-type", "'" + o.kv_type + "' is not f16, q8_0, q4_0 or fp8"};
  r.kv_type = *kv_type;
  if (!engine_supports(r.engine, r.kv_type)) {
    return BadInput{"--kv-type", std::string(kv_type_name(r.kv_type)) + " is not a " +
                                     (r.engine == Engine::kVllm ? "vLLM KV cache type (f16 or fp8)"
                                                                : "llama.cpp KV cache type "
                                                                  "(f16, q8_0 or q4_0)")};
  }

  if (o.gpus.empty()) return BadInput{"--gpus", "is required, like 4x32G"};
  auto gpus = parse_gpu_spec(o.gpus);
  if (!gpus) return BadInput{"--gpus", gpus.error().message};
  r.request.gpus = *gpus;

  if (o.concurrency == 0 || o.concurrency > kMaxConcurrency) {
    return BadInput{"--concurrency", "must be from 1 to " + std::to_string(kMaxConcurrency)};
  }
  r.request.concurrency = static_cast<uint32_t>(o.concurrency);
  if (o.tensor_parallel) {
    if (*o.tensor_parallel == 0 || *o.tensor_parallel > r.request.gpus.count) {
      return BadInput{"--tp", "must be from 1 to the number of GPUs (" +
                                  std::to_string(r.request.gpus.count) + ")"};
    }
    r.request.tensor_parallel = static_cast<uint32_t>(*o.tensor_parallel);
  }

  if (r.engine == Engine::kVllm) {
    r.request.memory_fraction = o.gpu_memory_utilization.value_or(kVllmDefaultFraction);
    if (!(r.request.memory_fraction > 0 && r.request.memory_fraction <= 1)) {
      return BadInput{"--gpu-memory-utilization", "must be in (0, 1]"};
    }
  } else {
    r.request.memory_fraction = 1.0;
    if (o.gpu_memory_utilization) {
      r.notes.push_back("--gpu-memory-utilization is a vLLM setting; llama.cpp ignores it");
    }
  }
  r.request.overhead_per_gpu = r.engine == Engine::kVllm ? 0 : kLlamaCppDefaultOverhead;
  r.request.even_split = r.engine == Engine::kVllm;
  if (!o.overhead.empty()) {
    auto overhead = parse_byte_size(o.overhead);
    if (!overhead) return BadInput{"--overhead", overhead.error().message};
    r.request.overhead_per_gpu = *overhead;
  }

  if (o.model.empty()) return BadInput{"--model", "is required (a .gguf file or a config.json)"};
  auto model = load_model(o.model);
  if (!model) return BadInput{"--model", model.error().message};
  r.model = std::move(*model);

  if (!o.weights_size.empty()) {
    auto weights = parse_byte_size(o.weights_size);
    if (!weights) return BadInput{"--weights-size", weights.error().message};
    if (r.model.weights_bytes) {
      r.notes.push_back("--weights-size " + o.weights_size + " replaces the " +
                        format_bytes(static_cast<double>(*r.model.weights_bytes)) +
                        " the model file gives");
    }
    r.model.weights_bytes = *weights;
  }
  if (!r.model.weights_bytes && r.model.format == "catalog") {
    return BadInput{"--weights-size",
                    "is required with a catalog model: the size of the weights you will run (a "
                    "quantized GGUF's file size, or the checkpoint's), e.g. --weights-size 20G"};
  }
  if (!r.model.weights_bytes) {
    return BadInput{"--weights-size",
                    "is required: " + r.model.source +
                        " does not give the weights' size (no model.safetensors.index.json or "
                        "model.safetensors beside it)"};
  }
  r.request.weights_bytes = *r.model.weights_bytes;

  if (o.context) {
    if (*o.context == 0 || *o.context > kMaxContext) {
      return BadInput{"--context", "must be from 1 to " + std::to_string(kMaxContext) + " tokens"};
    }
    r.request.context = *o.context;
    if (r.model.context_length && *o.context > r.model.context_length) {
      r.warnings.push_back("--context " + std::to_string(*o.context) +
                           " is beyond the trained context of " +
                           std::to_string(r.model.context_length) +
                           " tokens (llama-server warns n_ctx_seq > n_ctx_train; vLLM refuses "
                           "a --max-model-len above it): past it quality depends on RoPE scaling "
                           "(YaRN) the model was not trained with");
    }
  } else if (r.model.context_length) {
    r.request.context = std::min(r.model.context_length, kDefaultContextCap);
  } else {
    r.request.context = kDefaultContextCap;
    r.notes.push_back("the model does not state its trained context: planned at 32768 tokens");
  }

  // llama.cpp quantizes the cache in rows of 32-element blocks per head.
  if (r.engine == Engine::kLlamaCpp && (r.kv_type == KvType::kQ8_0 || r.kv_type == KvType::kQ4_0)) {
    const bool attention =
        r.model.count(LayerKind::kFullAttention) + r.model.count(LayerKind::kSlidingAttention) > 0;
    const uint32_t width = r.model.mla ? r.model.kv_lora_rank + r.model.rope_dim
                                       : std::min(r.model.key_length, r.model.value_length);
    if (attention && width % 32 != 0) {
      return BadInput{"--kv-type", std::string(kv_type_name(r.kv_type)) +
                                       " needs head dimensions that are multiples of 32; this "
                                       "model's are " +
                                       std::to_string(width)};
    }
  }
  return r;
}

}  // namespace

int run_plan(const PlanOptions& options, std::ostream& out, std::ostream& err) {
  auto prepared = prepare(options);
  if (auto* bad = std::get_if<BadInput>(&prepared)) {
    err << "switchyard plan: " << bad->flag << ": " << bad->message << "\n";
    return 2;
  }
  PlanReport& r = std::get<PlanReport>(prepared);

  r.kv = kv_footprint(r.model, r.kv_type);
  r.topology = plan_topology(r.request, r.kv);

  std::error_code ec;
  const auto absolute = std::filesystem::absolute(r.model.source, ec);
  LaunchInput launch;
  launch.model = &r.model;
  launch.model_path =
      ec || r.model.format == "catalog" ? r.model.source : absolute.lexically_normal().string();
  launch.engine = r.engine;
  launch.kv_type = r.kv_type;
  launch.context = r.request.context;
  launch.layout = &r.topology.chosen;
  launch.gpus = &r.request.gpus;
  launch.vllm_memory_fraction =
      r.engine == Engine::kVllm ? r.request.memory_fraction : kVllmDefaultFraction;
  r.launch = launch_plan(launch);
  if (r.model.format == "gguf" && r.launch.vllm) {
    r.notes.push_back(
        "vLLM's GGUF loading is experimental and needs --tokenizer <the original "
        "Hugging Face repo>");
  }
  if (r.model.format != "gguf" && r.launch.llamacpp) {
    r.notes.push_back("llama.cpp needs a GGUF of this model: replace MODEL.gguf");
  }

  if (options.json) {
    out << boost::json::serialize(plan_to_json(r)) << "\n";
  } else {
    write_plan_text(r, out);
  }
  return r.topology.fits ? 0 : 1;
}

}  // namespace switchyard::plan
