#include "plan/plan.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>
#include <ostream>
#include <system_error>
#include <variant>

#include "plan/byte_size.h"
#include "plan/compute_buffers.h"
#include "plan/device_breakdown.h"
#include "plan/gguf_model.h"
#include "plan/hf_config.h"
#include "plan/model_catalog.h"
#include "plan/plan_report.h"

namespace switchyard::plan {
namespace {

// Without --context: the trained context, capped so a 1M-token model is not planned at 1M.
constexpr uint64_t kDefaultContextCap = 32768;
constexpr double kVllmDefaultFraction = 0.9;
constexpr uint64_t kMaxUbatch = 65536;
constexpr uint64_t kMaxConcurrency = 1'000'000;
constexpr uint64_t kMaxContext = uint64_t{1} << 32;

std::string plural_text(uint64_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

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

  if (!o.gpu_model.empty()) {
    r.card = find_gpu_card(o.gpu_model);
    if (r.card == nullptr) {
      return BadInput{"--gpu", "'" + o.gpu_model + "' is not a card plan knows (" +
                                   gpu_card_names() + "); give --gpus with sizes instead"};
    }
  }
  if (o.gpus.empty()) {
    return BadInput{"--gpus", r.card ? "is required, like 4 (cards of the --gpu model) or 4x32G"
                                     : "is required, like 4x32G"};
  }
  std::string gpu_text = o.gpus;
  if (r.card && o.gpus.find_first_not_of("0123456789") == std::string::npos) {
    gpu_text = o.gpus + "x" + std::to_string(r.card->memory >> 30) + "G";
  }
  auto gpus = parse_gpu_spec(gpu_text);
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
  r.request.overhead_per_gpu = r.engine == Engine::kVllm ? 0 : kLlamaCppCardMargin;
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
  if (!o.weights_size.empty()) {
    // The file's placement no longer adds up to the size given: spread it evenly over the layers.
    r.model.layer_weights.clear();
    r.model.input_weights = r.model.output_weights = 0;
  }
  r.request.weights_bytes = *r.model.weights_bytes;

  if (o.n_ubatch == 0 || o.n_ubatch > kMaxUbatch) {
    return BadInput{"--ubatch", "must be from 1 to " + std::to_string(kMaxUbatch)};
  }
  r.n_ubatch = static_cast<uint32_t>(o.n_ubatch);
  if (o.gpu_layers) {
    const uint64_t all = r.model.layers.size() + 1;
    if (r.engine != Engine::kLlamaCpp) {
      return BadInput{"--ngl",
                      "is llama.cpp's partial offload; vLLM loads every layer on the GPUs"};
    }
    if (*o.gpu_layers == 0 || *o.gpu_layers > all) {
      return BadInput{"--ngl", "must be from 1 to " + std::to_string(all) + " (" +
                                   std::to_string(all - 1) +
                                   " layers + the output layer); leave it out to offload all"};
    }
    if (*o.gpu_layers < all) r.gpu_layers = static_cast<uint32_t>(*o.gpu_layers);
  }

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

  if (r.engine == Engine::kLlamaCpp) {
    if (auto refusal = llama_cache_refusal(r.model, r.kv_type))
      return BadInput{"--kv-type", *refusal};
  }
  return r;
}

// Plans the prepared request: topology, the per-device breakdown, commands and notes.
void finish_plan(PlanReport& r) {
  // llama.cpp: the cards hold the offloaded layers and the output layer, never the input layer.
  const uint32_t all_layers = static_cast<uint32_t>(r.model.layers.size()) + 1;
  const ModelFacts on_gpus = r.engine == Engine::kLlamaCpp
                                 ? offloaded_part(r.model, r.gpu_layers.value_or(all_layers))
                                 : r.model;
  r.kv = kv_footprint(on_gpus, r.kv_type);
  if (r.engine == Engine::kLlamaCpp) {
    r.request.weights_bytes = on_gpus.weights_bytes.value_or(0);
    // The request outlives this report's copies (plan_advice re-plans without --tp): own a copy.
    r.request.compute_bytes = [model = std::make_shared<const ModelFacts>(r.model),
                               context = r.request.context, n_ubatch = r.n_ubatch,
                               layers = on_gpus.layers.size()](Layout layout, uint32_t gpus,
                                                               uint32_t slots) {
      const ComputeEstimate c = estimate_compute(
          ComputeInput{model.get(), context * slots, slots, n_ubatch, /*flash_attention=*/true});
      // Row split computes on the main GPU only; a layer split on every card holding a layer.
      const uint32_t busy = layout == Layout::kTensorParallel
                                ? 1
                                : static_cast<uint32_t>(std::min<size_t>(gpus, layers));
      return c.output_card + (busy > 0 ? busy - 1 : 0) * c.layer_card;
    };
  }
  r.topology = plan_topology(r.request, r.kv);

  const InstanceLayout& chosen = r.topology.chosen;
  BreakdownInput bi;
  bi.model = &r.model;
  bi.kv_type = r.kv_type;
  bi.engine = r.engine;
  bi.layout = chosen.layout;
  for (uint32_t i = 0; i < chosen.gpus_per_instance; ++i) {
    bi.cards.push_back(r.request.gpus.cards.empty() ? r.request.gpus.bytes_each
                                                    : r.request.gpus.cards[i]);
  }
  bi.context = r.request.context;
  bi.slots = chosen.slots_per_instance;
  bi.gpu_layers = r.gpu_layers.value_or(all_layers);
  bi.n_ubatch = r.n_ubatch;
  bi.memory_fraction = r.request.memory_fraction;
  bi.overhead_per_gpu = r.request.overhead_per_gpu;
  r.breakdown = device_breakdown(bi);
  // The pool adds up the cards; a card can still overflow on its own (llama.cpp's row split keeps
  // the whole cache on the main GPU).
  for (const auto& d : r.breakdown.devices) {
    if (!d.fits() && r.topology.fits) {
      r.topology.fits = false;
      r.topology.chosen.fits = false;
      r.warnings.push_back(
          d.name + " needs " + format_bytes(d.total()) + " of its " + format_bytes(d.capacity) +
          " usable" +
          (chosen.layout == Layout::kTensorParallel && r.engine == Engine::kLlamaCpp
               ? ": llama.cpp's row split keeps the whole KV cache and the "
                 "compute buffers on the main GPU"
               : std::string()));
    }
  }

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
  launch.gpu_layers = r.gpu_layers;
  launch.n_ubatch = r.n_ubatch;
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
}

// Doctor's known issues and the chipset-slot pitfall, where they change the advice: a layout
// that runs collectives (vLLM tensor or pipeline parallel: RCCL on ROCm) across cards that
// cannot run them.
void apply_card_issues(const PlanOptions& o, PlanReport& r) {
  if (r.card == nullptr) return;
  const InstanceLayout& c = r.topology.chosen;
  const bool collectives = c.gpus_per_instance > 1 && r.engine == Engine::kVllm;
  if (!collectives) return;
  for (const auto& issue : o.card_issues) {
    if (c.gpus_per_instance < issue.min_gpus) continue;
    r.blocked = true;
    std::string advice = issue.advice;
    if (!advice.empty()) advice[0] = static_cast<char>(std::toupper(advice[0]));
    r.warnings.push_back(fmt::format("{} ({}): {} ({}); known issue {}. {}.", r.card->name,
                                     r.card->gfx, issue.summary, issue.sources, issue.id, advice));
  }
  if (r.card->vendor == GpuVendor::kAmd) {
    r.notes.push_back(
        "ROCm collectives (RCCL) need PCIe AtomicOps from every card to the CPU: a card in a "
        "chipset slot has none, and tensor or pipeline parallel across it fails at the first "
        "collective (HIP error 401). `switchyard doctor` names each card's slot (pcie.atomics); "
        "llama.cpp's --split-mode layer runs no collectives.");
  }
  if (!r.blocked) return;
  // What llama.cpp's layer split, which runs no collectives, makes of the same request.
  PlanOptions alt = o;
  alt.engine = "llamacpp";
  alt.kv_type = r.kv_type == KvType::kFp8 ? "q8_0" : o.kv_type;
  alt.gpu_memory_utilization.reset();
  alt.tensor_parallel.reset();
  alt.card_issues.clear();
  auto prepared = prepare(alt);
  if (auto* other = std::get_if<PlanReport>(&prepared)) {
    finish_plan(*other);
    const InstanceLayout& l = other->topology.chosen;
    r.warnings.push_back(
        fmt::format("With --engine llamacpp{} the same request {}: {}, {} x {}{}.",
                    alt.kv_type != o.kv_type ? " --kv-type " + alt.kv_type : std::string(),
                    other->topology.fits ? "fits" : "does not fit either", layout_name(l.layout),
                    plural_text(l.instances, "instance"), plural_text(l.gpus_per_instance, "card"),
                    l.layout == Layout::kLayerSplit ? " (--split-mode layer)" : ""));
  }
}
}  // namespace

int run_plan(const PlanOptions& options, std::ostream& out, std::ostream& err) {
  auto prepared = prepare(options);
  if (auto* bad = std::get_if<BadInput>(&prepared)) {
    err << "switchyard plan: " << bad->flag << ": " << bad->message << "\n";
    return 2;
  }
  PlanReport& r = std::get<PlanReport>(prepared);
  finish_plan(r);
  apply_card_issues(options, r);

  if (options.json) {
    out << boost::json::serialize(plan_to_json(r)) << "\n";
  } else {
    write_plan_text(r, out);
  }
  return r.topology.fits ? 0 : 1;
}

}  // namespace switchyard::plan
