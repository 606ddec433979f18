#include "plan/command_memory.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string_view>

#include "plan/byte_size.h"
#include "plan/device_breakdown.h"
#include "plan/gguf_model.h"
#include "plan/kv_math.h"

namespace switchyard::plan {
namespace {

using Argv = std::vector<std::string>;
constexpr double kVllmDefaultUtilization = 0.9;

// The value of the last of `names` on the line ("-c 4096" or "--ctx-size=4096"): both engines'
// parsers let a later flag win.
std::optional<std::string> flag_value(const Argv& argv,
                                      std::initializer_list<std::string_view> names) {
  std::optional<std::string> value;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string_view word = argv[i];
    for (const auto name : names) {
      if (word == name && i + 1 < argv.size()) {
        value = argv[i + 1];
      } else if (word.size() > name.size() && word.starts_with(name) && word[name.size()] == '=') {
        value = std::string(word.substr(name.size() + 1));
      }
    }
  }
  return value;
}

template <class T>
Result<T> number(std::string_view flag, const std::string& text) {
  T n{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < T{}) {
    return Error{fmt::format("{}: '{}' is not a number", flag, text)};
  }
  return n;
}

enum class Kind { kLlamaServer, kVllm, kOther };

Kind engine_of(const Argv& argv) {
  const std::string program = std::filesystem::path(argv[0]).filename().string();
  if (program.starts_with("llama-server")) return Kind::kLlamaServer;
  if (program == "vllm" && argv.size() > 1 && argv[1] == "serve") return Kind::kVllm;
  for (size_t i = 1; i + 1 < argv.size(); ++i) {
    if (argv[i] == "-m" && argv[i + 1].starts_with("vllm.entrypoints")) return Kind::kVllm;
  }
  return Kind::kOther;
}

Result<CommandMemory> vllm_memory(const Argv& argv, const std::vector<uint64_t>& cards) {
  double fraction = kVllmDefaultUtilization;
  if (const auto text = flag_value(argv, {"--gpu-memory-utilization"})) {
    auto parsed = number<double>("--gpu-memory-utilization", *text);
    if (!parsed) return parsed.error();
    if (!(*parsed > 0 && *parsed <= 1)) {
      return Error{"--gpu-memory-utilization: " + *text + " is not in (0, 1]"};
    }
    fraction = *parsed;
  }
  CommandMemory m;
  for (size_t g = 0; g < cards.size(); ++g) {
    if (cards[g] == 0) {
      return Error{fmt::format(
          "vLLM takes --gpu-memory-utilization of each card, and the memory of its GPU #{} is "
          "unknown",
          g)};
    }
    m.per_gpu.push_back(static_cast<uint64_t>(std::llround(fraction * cards[g])));
  }
  m.source = fmt::format("vLLM: --gpu-memory-utilization {}{} x the card's memory", fraction,
                         fraction == kVllmDefaultUtilization ? " (its default)" : "");
  return m;
}

// -ctk / -ctv: the KV cache's element type. bf16 takes f16's two bytes.
Result<KvType> cache_type(const Argv& argv, std::initializer_list<std::string_view> names,
                          const ModelFacts& model) {
  const std::string text = flag_value(argv, names).value_or("f16");
  if (text == "bf16") return KvType::kF16;
  const auto type = parse_kv_type(text);
  if (!type || *type == KvType::kFp8) {
    return Error{fmt::format("{}: cache type '{}' is not modelled by plan (f16, bf16, q8_0, q4_0)",
                             *names.begin(), text)};
  }
  if (auto refusal = llama_cache_refusal(model, *type)) {
    return Error{fmt::format("{}: {}", *names.begin(), *refusal)};
  }
  return *type;
}

// What llama-server's flags say about memory, with the defaults it applies.
struct LlamaFlags {
  ModelFacts model;
  uint64_t context = 0;  // -c: the whole cache
  uint32_t slots = 1;    // -np
  KvType kv = KvType::kF16;
  uint32_t gpu_layers = 0;  // -ngl, capped at every layer + the output layer
  Layout layout = Layout::kLayerSplit;
  std::vector<double> split;  // --tensor-split, one share per card (empty: by card size)
  uint32_t n_ubatch = 512;
  std::vector<std::string> defaults;  // flags not given, said in the source text
};

// -sm, -mg, -ts: how the layers spread over the instance's cards.
Result<bool> read_split(const Argv& argv, const std::vector<uint64_t>& cards, LlamaFlags& f) {
  const std::string mode = flag_value(argv, {"-sm", "--split-mode"}).value_or("layer");
  if (mode != "layer" && mode != "row" && mode != "none") {
    return Error{"-sm: '" + mode + "' is not layer, row or none"};
  }
  f.layout = mode == "row" ? Layout::kTensorParallel : Layout::kLayerSplit;
  uint64_t main_gpu = 0;
  if (const auto text = flag_value(argv, {"-mg", "--main-gpu"})) {
    auto n = number<uint64_t>("-mg", *text);
    if (!n) return n.error();
    if (*n >= cards.size()) {
      return Error{fmt::format("-mg: GPU {} of an instance with {} GPU(s)", *n, cards.size())};
    }
    main_gpu = *n;
  }
  if (mode == "none") {
    f.split.assign(cards.size(), 0.0);
    f.split[main_gpu] = 1.0;
    return true;
  }
  if (const auto text = flag_value(argv, {"-ts", "--tensor-split"})) {
    double sum = 0;
    for (size_t start = 0; start <= text->size();) {
      const size_t end = std::min(text->find_first_of(",/", start), text->size());
      auto share = number<double>("-ts", text->substr(start, end - start));
      if (!share) return share.error();
      f.split.push_back(*share);
      sum += *share;
      start = end + 1;
    }
    if (f.split.size() > cards.size() || !(sum > 0)) {
      return Error{fmt::format("-ts: '{}' for an instance with {} GPU(s)", *text, cards.size())};
    }
    f.split.resize(cards.size(), 0.0);
  } else if (std::find(cards.begin(), cards.end(), uint64_t{0}) != cards.end()) {
    f.split.assign(cards.size(), 1.0);  // card sizes unknown: llama.cpp's free memory, assumed even
  }
  return true;
}

Result<LlamaFlags> read_llama_flags(const Argv& argv, const std::vector<uint64_t>& cards) {
  LlamaFlags f;
  const auto path = flag_value(argv, {"-m", "--model"});
  if (!path) return Error{"-m: not given (a model llama-server downloads, -hf, is not read)"};
  auto model = load_gguf_model(*path);
  if (!model) return Error{"-m: " + model.error().message};
  f.model = std::move(*model);
  const auto ctx = flag_value(argv, {"-c", "--ctx-size"});
  if (ctx) {
    auto n = number<uint64_t>("-c", *ctx);
    if (!n) return n.error();
    f.context = *n;
  }
  if (f.context == 0) {
    if (f.model.context_length == 0)
      return Error{
          "-c: not given, and the model has no trained "
          "context to default to"};
    f.context = f.model.context_length;
    f.defaults.push_back(fmt::format("-c the model's {}", f.context));
  }
  if (const auto np = flag_value(argv, {"-np", "--parallel"}); np && *np != "-1") {
    auto n = number<uint32_t>("-np", *np);
    if (!n) return n.error();
    if (*n == 0 || *n > f.context)
      return Error{fmt::format("-np: {} slots for -c {}", *np, f.context)};
    f.slots = *n;
  }
  auto k = cache_type(argv, {"-ctk", "--cache-type-k"}, f.model);
  if (!k) return k.error();
  auto v = cache_type(argv, {"-ctv", "--cache-type-v"}, f.model);
  if (!v) return v.error();
  // One type for both: the larger, so a mixed cache is never under-counted.
  f.kv = kv_bytes_per_element(*k) >= kv_bytes_per_element(*v) ? *k : *v;
  const uint32_t all = static_cast<uint32_t>(f.model.layers.size()) + 1;
  f.gpu_layers = all;
  if (const auto ngl = flag_value(argv, {"-ngl", "--gpu-layers", "--n-gpu-layers"});
      ngl && *ngl != "-1" && *ngl != "all" && *ngl != "auto") {
    auto n = number<uint64_t>("-ngl", *ngl);
    if (!n) return n.error();
    f.gpu_layers = static_cast<uint32_t>(std::min<uint64_t>(*n, all));
  }
  if (const auto ub = flag_value(argv, {"-ub", "--ubatch-size"})) {
    auto n = number<uint32_t>("-ub", *ub);
    if (!n) return n.error();
    if (*n == 0) return Error{"-ub: 0"};
    f.n_ubatch = *n;
  }
  auto split = read_split(argv, cards, f);
  if (!split) return split.error();
  return f;
}

std::string card_text(const DeviceUse& d, uint64_t margin) {
  return fmt::format("{} {} (weights {} + KV {} + compute {} + margin {})", d.name,
                     format_bytes(d.total() + margin), format_bytes(d.weights), format_bytes(d.kv),
                     format_bytes(d.compute), format_bytes(margin));
}

Result<CommandMemory> llama_memory(const Argv& argv, const std::vector<uint64_t>& cards) {
  auto flags = read_llama_flags(argv, cards);
  if (!flags) return flags.error();
  const LlamaFlags& f = *flags;
  BreakdownInput in;
  in.model = &f.model;
  in.kv_type = f.kv;
  in.engine = Engine::kLlamaCpp;
  in.layout = cards.size() == 1 ? Layout::kReplicas : f.layout;
  in.cards = cards;
  in.context = f.context / f.slots;  // llama-server gives each slot an equal share of -c
  in.slots = f.slots;
  in.gpu_layers = f.gpu_layers;
  in.n_ubatch = f.n_ubatch;
  in.tensor_split = f.split;
  const Breakdown b = device_breakdown(in);
  CommandMemory m;
  std::string per_card;
  for (size_t g = 0; g < cards.size(); ++g) {
    const DeviceUse& d = b.devices[g + 1];
    // A card the model does not use gets no runtime context either.
    const uint64_t margin = d.total() > 0 ? kLlamaCppCardMargin : 0;
    m.per_gpu.push_back(static_cast<uint64_t>(std::llround(d.total())) + margin);
    per_card += (g ? "; " : "") + card_text(d, margin);
  }
  m.source = fmt::format(
      "plan's llama.cpp estimate for {}: -c {} over {} slot(s), {} KV, {} of {} layers on the "
      "GPUs{}{}: {}",
      std::filesystem::path(f.model.source).filename().string(), f.context, f.slots,
      kv_type_name(f.kv), f.gpu_layers, f.model.layers.size() + 1,
      f.layout == Layout::kTensorParallel ? ", row split" : "",
      f.defaults.empty() ? "" : " (" + fmt::format("{}", fmt::join(f.defaults, ", ")) + ")",
      per_card);
  return m;
}

}  // namespace

Result<CommandMemory> estimate_command_memory(const std::vector<std::string>& argv,
                                              const std::vector<uint64_t>& cards) {
  if (argv.empty() || cards.empty()) return Error{"no command or no GPUs to estimate for"};
  switch (engine_of(argv)) {
    case Kind::kLlamaServer:
      return llama_memory(argv, cards);
    case Kind::kVllm:
      return vllm_memory(argv, cards);
    case Kind::kOther:
      break;
  }
  return Error{"'" + argv[0] + "' is neither llama-server nor vllm serve: plan cannot estimate it"};
}

}  // namespace switchyard::plan
