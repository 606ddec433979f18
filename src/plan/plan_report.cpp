#include "plan/plan_report.h"

#include <fmt/format.h>

#include <boost/json.hpp>

#include <cmath>
#include <map>
#include <ostream>

#include "plan/byte_size.h"

namespace switchyard::plan {
namespace {

namespace json = boost::json;

std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string plural(uint64_t n, std::string_view word) {
  return fmt::format("{} {}{}", grouped(n), word, n == 1 ? "" : "s");
}

std::string bytes_text(double bytes) {
  return bytes < 1024 ? fmt::format("{:.0f} B", bytes) : format_bytes(bytes);
}

// "16 layers x 4 heads x (256 + 256) x 1 B" terms, one per distinct head count and layer kind.
std::string per_token_formula(const PlanReport& r) {
  const double element = kv_bytes_per_element(r.kv_type);
  std::map<std::pair<bool, uint32_t>, uint32_t> groups;  // (sliding, heads) -> layers
  // With --ngl the KV figures are the cards' share: the layers kept in RAM are left out.
  const size_t first = r.model.layers.size() - r.layers_on_gpus();
  for (size_t il = first; il < r.model.layers.size(); ++il) {
    const auto& layer = r.model.layers[il];
    if (layer.kind == LayerKind::kFullAttention || layer.kind == LayerKind::kSlidingAttention) {
      ++groups[{layer.kind == LayerKind::kSlidingAttention, r.model.mla ? 1 : layer.n_head_kv}];
    }
  }
  std::string formula;
  for (const auto& [key, layers] : groups) {
    const auto [sliding, heads] = key;
    std::string term;
    if (r.model.mla) {
      term = fmt::format("{} x ({} latent + {} rope) x {:g} B", plural(layers, "layer"),
                         r.model.kv_lora_rank, r.model.rope_dim, element);
    } else {
      term =
          fmt::format("{} x {} x ({} + {}) x {:g} B", plural(layers, "layer"),
                      plural(heads, "head"), sliding ? r.model.key_length_swa : r.model.key_length,
                      sliding ? r.model.value_length_swa : r.model.value_length, element);
    }
    if (sliding) term += " (sliding)";
    formula += (formula.empty() ? "" : " + ") + term;
  }
  return formula.empty() ? "no layer keeps KV" : formula;
}

std::string layer_summary(const ModelFacts& m) {
  std::vector<std::string> parts;
  auto add = [&](LayerKind kind, std::string_view what) {
    if (const uint32_t n = m.count(kind)) parts.push_back(fmt::format("{} {}", n, what));
  };
  add(LayerKind::kFullAttention, "full attention");
  add(LayerKind::kSlidingAttention, fmt::format("sliding window {}", m.sliding_window));
  add(LayerKind::kRecurrent, "recurrent");
  add(LayerKind::kNone, "without cache");
  std::string out = fmt::format("{} layers", m.layers.size());
  for (size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? ": " : ", ") + parts[i];
  if (m.mla) out += fmt::format(" (MLA, kv_lora_rank {})", m.kv_lora_rank);
  return out;
}

double usable(const CapacityRequest& req, uint64_t card_bytes) {
  return req.memory_fraction * static_cast<double>(card_bytes) -
         static_cast<double>(req.overhead_per_gpu);
}

// "4 x 32.0 GiB", or "2 x 32.0 GiB + 2 x 24.0 GiB" for mixed cards.
std::string cards_text(const GpuSpec& gpus) {
  if (!gpus.mixed())
    return fmt::format("{} x {}", gpus.count, bytes_text(static_cast<double>(gpus.bytes_each)));
  std::string out;
  for (size_t i = 0; i < gpus.cards.size();) {
    size_t same = i;
    while (same < gpus.cards.size() && gpus.cards[same] == gpus.cards[i]) ++same;
    out += fmt::format("{}{} x {}", out.empty() ? "" : " + ", same - i,
                       bytes_text(static_cast<double>(gpus.cards[i])));
    i = same;
  }
  return out;
}

// What the weights exceed the chosen instance's cards by, when they do.
std::string weights_excess_text(const PlanReport& r) {
  const InstanceLayout& c = r.topology.chosen;
  return fmt::format("none: the weights alone exceed {} by {}",
                     c.gpus_per_instance == r.request.gpus.count
                         ? std::string("the GPUs")
                         : fmt::format("{} per instance", plural(c.gpus_per_instance, "card")),
                     bytes_text(-c.pool_bytes_per_instance));
}

json::value optional_number(const std::optional<uint64_t>& v) {
  return v ? json::value(*v) : json::value(nullptr);
}

// Byte counts are whole in all but odd quantized cases: print them as integers then, not 6.4E2.
json::value bytes_number(double v) {
  if (std::floor(v) == v && std::fabs(v) < 9007199254740992.0) {
    return json::value(static_cast<int64_t>(v));
  }
  return json::value(v);
}

// "32 + output", "input", "12 of 32" style layer column.
std::string layers_text(const DeviceUse& d) {
  std::vector<std::string> parts;
  if (d.input_layer) parts.push_back("input");
  if (d.layers > 0) parts.push_back(std::to_string(d.layers));
  if (d.output_layer) parts.push_back("output");
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : " + ") + p;
  return out.empty() ? "-" : out;
}

void write_breakdown(const PlanReport& r, std::ostream& out) {
  const InstanceLayout& c = r.topology.chosen;
  const bool llama = r.engine == Engine::kLlamaCpp;
  out << fmt::format("\nPer device (one instance: {} x {} tokens{})\n",
                     plural(c.slots_per_instance, "slot"), grouped(r.request.context),
                     llama ? fmt::format(", -ub {}", r.n_ubatch) : std::string());
  out << fmt::format("  {:<6} {:<18} {:>11} {:>11} {:>11} {:>11} {:>11}\n", "device", "layers",
                     "weights", "KV", "compute", "total", "usable");
  for (const auto& d : r.breakdown.devices) {
    const bool cpu = d.name == "CPU";
    if (cpu && d.total() == 0) continue;
    out << fmt::format("  {:<6} {:<18} {:>11} {:>11} {:>11} {:>11} {:>11}{}\n", d.name,
                       layers_text(d), bytes_text(d.weights), d.kv > 0 ? bytes_text(d.kv) : "-",
                       llama ? bytes_text(d.compute) : "in fraction", bytes_text(d.total()),
                       cpu ? "RAM" : bytes_text(d.capacity), d.fits() ? "" : "  OVER");
  }
  if (llama) {
    const ComputeEstimate& e = r.breakdown.compute;
    out << fmt::format(
        "  compute      llama.cpp's worst-case graph at {} tokens (-ub), flash attention on: {} "
        "per layer card, {} on the output card (logits {} x {} x f32), {} pinned host + {} "
        "output buffer\n",
        e.n_tokens, bytes_text(e.layer_card), bytes_text(e.output_card), grouped(r.model.n_vocab),
        e.n_tokens, bytes_text(e.host), bytes_text(e.host_output));
    out << fmt::format(
        "  accuracy     the formula gives llama-server's logged buffers exactly for a dense model "
        "without flash attention; other graphs (flash attention, MoE, MLA, recurrent) are not "
        "checked: if flash attention is unavailable a layer card needs {} (the KQ matrix); "
        "--overhead ({}) is the margin for the rest\n",
        bytes_text(e.layer_card_without_fa),
        bytes_text(static_cast<double>(r.request.overhead_per_gpu)));
  }
  if (r.gpu_layers) {
    out << fmt::format(
        "  offload      -ngl {}: {} and their KV stay in RAM and run on the CPU (much slower "
        "per token than the cards)\n",
        *r.gpu_layers, plural(r.breakdown.devices.front().layers, "layer"));
  }
  if (r.model.layer_weights.empty()) {
    out << "  weights      spread evenly over the layers (no tensor list: config.json, catalog "
           "or --weights-size)\n";
  }
}

}  // namespace

std::vector<std::string> plan_advice(const PlanReport& r) {
  std::vector<std::string> advice;
  const InstanceLayout& c = r.topology.chosen;
  const auto& req = r.request;
  const uint32_t n_layer = static_cast<uint32_t>(r.model.layers.size());

  if (r.topology.fits) {
    switch (c.layout) {
      case Layout::kReplicas:
        advice.push_back(fmt::format(
            "One card holds the model and {} of {} tokens: run one instance per card ({} "
            "instances, {} each). Expected aggregate throughput is about {} x one card's; a "
            "failed card costs 1/{} of capacity; no collective-communication library is involved.",
            plural(c.slots_per_instance, "sequence"), grouped(req.context), c.instances,
            plural(c.slots_per_instance, "slot"), c.instances, c.instances));
        break;
      case Layout::kLayerSplit:
        if (c.widened_from > 0) {
          advice.push_back(fmt::format(
              "No single card holds it; {} cards in a layer split do. Rather than leave {} idle, "
              "each split takes {}: run {} of {} cards. The extra cards add KV room (each adds a "
              "sync point per token, no speed).",
              c.widened_from, plural(req.gpus.count - c.widened_from * c.instances, "card"),
              c.gpus_per_instance, plural(c.instances, "instance"), c.gpus_per_instance));
        } else {
          advice.push_back(fmt::format(
              "No single card holds it; {} cards in a layer split do. Run {} of {} cards{}. "
              "Each extra card in a split adds a sync point per token and no speed: do not split "
              "wider.",
              c.gpus_per_instance, plural(c.instances, "instance"), c.gpus_per_instance,
              c.idle_gpus
                  ? fmt::format(" ({} left over: too small alone)", plural(c.idle_gpus, "card"))
                  : std::string()));
        }
        if (r.engine == Engine::kVllm) {
          advice.push_back(
              "vLLM's pipeline parallel runs collectives too (RCCL/NCCL): run `switchyard doctor` "
              "before relying on it, or use llama.cpp's layer split, which needs none.");
        }
        break;
      case Layout::kTensorParallel: {
        advice.push_back(fmt::format(
            "Tensor parallel over {} cards costs two all-reduces per layer per token ({} sync "
            "points per token for {} layers) over PCIe. It pays off for bursts of many requests "
            "and huge cold prefills, not as the daily default.{}",
            c.gpus_per_instance, 2 * n_layer, n_layer,
            r.card && r.card->vendor == GpuVendor::kNvidia
                ? std::string()
                : std::string(" On AMD, RCCL needs PCIe atomics on every card's root port: run "
                              "`switchyard doctor` first.")));
        CapacityRequest without_tp = req;
        without_tp.tensor_parallel.reset();
        const TopologyPlan alt = plan_topology(without_tp, r.kv);
        if (alt.fits && alt.chosen.gpus_per_instance < c.gpus_per_instance) {
          advice.push_back(fmt::format(
              "Without --tp, {} per instance would fit ({}): prefer that for daily use.",
              plural(alt.chosen.gpus_per_instance, "card"), layout_name(alt.chosen.layout)));
        }
        break;
      }
    }
    return advice;
  }

  const double pool_total = c.pool_bytes_per_instance * c.instances;
  if (c.pool_bytes_per_instance <= 0) {
    advice.push_back(fmt::format(
        "Does not fit: the weights ({}) alone exceed the usable memory of {} by {} ({} after "
        "the per-card overhead{}).",
        bytes_text(static_cast<double>(req.weights_bytes)), plural(c.gpus_per_instance, "card"),
        bytes_text(-c.pool_bytes_per_instance),
        bytes_text(c.pool_bytes_per_instance + static_cast<double>(req.weights_bytes)),
        req.memory_fraction < 1 ? fmt::format(" and the {:g} utilization", req.memory_fraction)
                                : std::string()));
    return advice;
  }
  advice.push_back(fmt::format(
      "Does not fit: {} x {} = {} of cache is wanted, but {} hold{} {} after weights and "
      "overhead.",
      plural(req.concurrency, "sequence"), bytes_text(r.kv.bytes_per_sequence(req.context)),
      bytes_text(r.topology.bytes_needed),
      c.instances == 1
          ? fmt::format("{} in one instance", plural(c.gpus_per_instance, "card"))
          : fmt::format("{} instances of {}", c.instances, plural(c.gpus_per_instance, "card")),
      c.instances == 1 && c.gpus_per_instance == 1 ? "s" : "", bytes_text(pool_total)));
  advice.push_back(fmt::format("At {} tokens per sequence these cards hold {}.",
                               grouped(req.context), plural(r.topology.max_sequences, "sequence")));
  if (r.topology.max_context && *r.topology.max_context > 0) {
    advice.push_back(fmt::format("For {} the context must drop to {} tokens.",
                                 plural(req.concurrency, "sequence"),
                                 grouped(*r.topology.max_context)));
  }
  if (r.kv_type == KvType::kF16) {
    advice.push_back(r.engine == Engine::kVllm
                         ? "--kv-type fp8 halves the KV cache (check the engine log that FP8 "
                           "really took effect: a silent fallback to BF16 doubles it)."
                         : "--kv-type q8_0 nearly halves the KV cache.");
  }
  if (r.engine == Engine::kVllm) {
    advice.push_back(
        "Run past the pool, vLLM preempts and recomputes: throughput falls to single digits. "
        "Watch vllm:num_preemptions_total; lower --max-num-seqs or --max-model-len until it stays "
        "flat, and cap active agent sessions at the gateway.");
  }
  return advice;
}

void write_plan_text(const PlanReport& r, std::ostream& out) {
  const ModelFacts& m = r.model;
  const auto& req = r.request;
  const InstanceLayout& c = r.topology.chosen;
  const double per_sequence = r.kv.bytes_per_sequence(req.context);

  out << fmt::format("Model          {} ({}, {})\n", m.source, m.architecture, m.format);
  out << fmt::format("  layers       {}\n", layer_summary(m));
  if (!m.mla && m.count(LayerKind::kFullAttention) + m.count(LayerKind::kSlidingAttention) > 0) {
    out << fmt::format("  KV dims      key {} + value {} per head\n", m.key_length, m.value_length);
  }
  out << fmt::format("  trained ctx  {}\n", m.context_length ? grouped(m.context_length) + " tokens"
                                                             : std::string("unknown"));
  const double total_weights = static_cast<double>(m.weights_bytes.value_or(req.weights_bytes));
  out << fmt::format("  weights      {}{}{}\n", bytes_text(total_weights),
                     m.files > 1 ? fmt::format(" ({} files)", m.files) : std::string(),
                     static_cast<double>(req.weights_bytes) != total_weights
                         ? fmt::format(", {} of it on the GPUs",
                                       bytes_text(static_cast<double>(req.weights_bytes)))
                         : std::string());

  out << fmt::format("\nKV cache ({}{})\n", kv_type_name(r.kv_type),
                     r.gpu_layers ? fmt::format(", on the GPUs: the {} offloaded",
                                                plural(r.layers_on_gpus(), "layer"))
                                  : std::string());
  out << fmt::format("  per token    {} = {}\n", bytes_text(r.kv.bytes_per_token()),
                     per_token_formula(r));
  if (r.kv.sliding_window > 0 && r.kv.sliding_bytes_per_token > 0) {
    out << fmt::format("  sliding      {} of it stops growing at {} tokens\n",
                       bytes_text(r.kv.sliding_bytes_per_token), grouped(r.kv.sliding_window));
  }
  if (r.kv.state_bytes_per_sequence > 0) {
    out << fmt::format("  state        {} per sequence = {} x {} f32 elements x 4 B\n",
                       bytes_text(static_cast<double>(r.kv.state_bytes_per_sequence)),
                       plural(m.count(LayerKind::kRecurrent), "recurrent layer"),
                       grouped(m.recurrent_state_elements));
  }
  out << fmt::format("  per sequence {} at {} tokens\n", bytes_text(per_sequence),
                     grouped(req.context));
  out << fmt::format("  wanted       {} x {} = {}", plural(req.concurrency, "sequence"),
                     bytes_text(per_sequence), bytes_text(r.topology.bytes_needed));
  if (r.kv.state_bytes_per_sequence > 0) {
    const double state = static_cast<double>(r.kv.state_bytes_per_sequence) * req.concurrency;
    out << fmt::format(" ({} KV + {} recurrent state)", bytes_text(r.topology.bytes_needed - state),
                       bytes_text(state));
  }
  out << "\n";

  out << fmt::format("\nMemory ({}, {})\n", engine_name(r.engine), cards_text(req.gpus));
  std::string usable_text = bytes_text(usable(req, req.gpus.bytes_each));
  if (req.gpus.mixed()) {
    usable_text.clear();
    for (uint64_t card : req.gpus.cards)
      usable_text += (usable_text.empty() ? "" : ", ") + bytes_text(usable(req, card));
  }
  out << fmt::format(
      "  usable/card  {}{}{}\n", usable_text,
      req.memory_fraction < 1 ? fmt::format(" = {:g} utilization", req.memory_fraction)
                              : std::string(" = whole card"),
      req.overhead_per_gpu
          ? fmt::format(" - {} overhead", bytes_text(static_cast<double>(req.overhead_per_gpu)))
          : std::string());

  out << fmt::format("\nTopology       {}: {} x {}, {} each\n", layout_name(c.layout),
                     plural(c.instances, "instance"), plural(c.gpus_per_instance, "card"),
                     plural(c.slots_per_instance, "slot"));
  if (c.pool_bytes_per_instance > 0) {
    out << fmt::format("  KV pool      {} per instance{}\n", bytes_text(c.pool_bytes_per_instance),
                       req.gpus.mixed() ? " (the smallest instance's)" : "");
  } else {
    out << "  KV pool      " << weights_excess_text(r) << "\n";
  }
  if (c.pool_tokens_per_instance) {
    out << fmt::format("  tokens       {} per instance\n", grouped(*c.pool_tokens_per_instance));
  }
  if (c.max_concurrency_per_instance) {
    out << fmt::format("  concurrency  {:.2f}x per instance at {} tokens per request\n",
                       *c.max_concurrency_per_instance, grouped(req.context));
  }
  out << fmt::format("  verdict      {}\n", r.topology.fits ? "FITS" : "DOES NOT FIT");
  write_breakdown(r, out);

  if (!r.warnings.empty()) {
    out << "\nWarnings\n";
    for (const auto& line : r.warnings) out << "  ! " << line << "\n";
  }

  out << "\nAdvice\n";
  for (const auto& line : plan_advice(r)) out << "  - " << line << "\n";

  // The commands of a plan that does not fit would fail as they stand: say so where they start.
  const std::string unfit = r.topology.fits ? "" : " - DOES NOT FIT as planned: not ready to paste";
  // A known issue of the card breaks the vLLM layout however well it fits.
  const std::string fails =
      r.blocked ? fmt::format(" - WILL FAIL on {} (see Warnings): not ready to paste", r.card->name)
                : unfit;
  if (r.launch.llamacpp)
    out << "\nllama.cpp, per instance" << unfit << "\n  " << *r.launch.llamacpp << "\n";
  if (r.launch.vllm) out << "\nvLLM, per instance" << fails << "\n  " << *r.launch.vllm << "\n";
  out << "\nFleet config (" << engine_name(r.engine) << ")" << fails << "\n" << r.launch.fleet_yaml;

  std::vector<std::string> notes = m.notes;
  notes.insert(notes.end(), r.notes.begin(), r.notes.end());
  if (!notes.empty()) {
    out << "\nNotes\n";
    for (const auto& note : notes) out << "  - " << note << "\n";
  }
}

json::object plan_to_json(const PlanReport& r) {
  const ModelFacts& m = r.model;
  const auto& req = r.request;
  const InstanceLayout& c = r.topology.chosen;

  json::array kv_heads;
  for (const auto& layer : m.layers) kv_heads.push_back(layer.n_head_kv);
  json::object model{
      {"source", m.source},
      {"format", m.format},
      {"architecture", m.architecture},
      {"name", m.name},
      {"layers", m.layers.size()},
      {"full_attention_layers", m.count(LayerKind::kFullAttention)},
      {"sliding_window_layers", m.count(LayerKind::kSlidingAttention)},
      {"recurrent_layers", m.count(LayerKind::kRecurrent)},
      {"layers_without_cache", m.count(LayerKind::kNone)},
      {"n_head_kv", std::move(kv_heads)},
      {"key_length", m.key_length},
      {"value_length", m.value_length},
      {"sliding_window", m.sliding_window},
      {"mla", m.mla},
      {"kv_lora_rank", m.kv_lora_rank},
      {"rope_dim", m.rope_dim},
      {"recurrent_state_elements", m.recurrent_state_elements},
      {"trained_context", m.context_length},
      {"weights_bytes", m.weights_bytes.value_or(req.weights_bytes)},
      {"gpu_weights_bytes", req.weights_bytes},
      {"files", m.files},
  };

  json::object topology{
      {"layout", layout_name(c.layout)},
      {"gpus_per_instance", c.gpus_per_instance},
      {"instances", c.instances},
      {"idle_gpus", c.idle_gpus},
      {"slots_per_instance", c.slots_per_instance},
      {"pool_bytes_per_instance", bytes_number(std::floor(c.pool_bytes_per_instance))},
      {"pool_bytes_per_gpu",
       bytes_number(std::floor(c.pool_bytes_per_instance / c.gpus_per_instance))},
      {"pool_tokens_per_instance", optional_number(c.pool_tokens_per_instance)},
      {"max_concurrency_per_instance", c.max_concurrency_per_instance
                                           ? json::value(*c.max_concurrency_per_instance)
                                           : json::value(nullptr)},
      {"max_sequences", r.topology.max_sequences},
  };

  json::array cards;
  for (uint64_t card : req.gpus.cards.empty()
                           ? std::vector<uint64_t>(req.gpus.count, req.gpus.bytes_each)
                           : req.gpus.cards)
    cards.push_back(card);
  json::array advice;
  for (const auto& line : plan_advice(r)) advice.push_back(json::string(line));
  json::array warnings;
  for (const auto& w : r.warnings) warnings.push_back(json::string(w));
  json::array notes;
  for (const auto& note : m.notes) notes.push_back(json::string(note));
  for (const auto& note : r.notes) notes.push_back(json::string(note));

  json::array devices;
  for (const auto& d : r.breakdown.devices) {
    devices.push_back(json::object{
        {"name", d.name},
        {"layers", d.layers},
        {"input_layer", d.input_layer},
        {"output_layer", d.output_layer},
        {"weights_bytes", bytes_number(std::round(d.weights))},
        {"kv_bytes", bytes_number(std::round(d.kv))},
        {"compute_bytes", bytes_number(std::round(d.compute))},
        {"total_bytes", bytes_number(std::round(d.total()))},
        {"usable_bytes",
         d.name == "CPU" ? json::value(nullptr) : bytes_number(std::floor(d.capacity))},
        {"fits", d.fits()},
    });
  }
  const ComputeEstimate& e = r.breakdown.compute;
  json::value compute = nullptr;
  if (r.engine == Engine::kLlamaCpp) {
    compute = json::object{
        {"n_ubatch", r.n_ubatch},
        {"n_tokens", e.n_tokens},
        {"flash_attention", true},
        {"layer_card_bytes", bytes_number(std::round(e.layer_card))},
        {"output_card_bytes", bytes_number(std::round(e.output_card))},
        {"host_bytes", bytes_number(std::round(e.host))},
        {"host_output_bytes", bytes_number(std::round(e.host_output))},
        {"layer_card_bytes_without_flash_attention",
         bytes_number(std::round(e.layer_card_without_fa))},
    };
  }

  return json::object{
      {"fits", r.topology.fits},
      {"devices", std::move(devices)},
      {"compute", std::move(compute)},
      {"gpu_layers", r.gpu_layers ? json::value(*r.gpu_layers) : json::value(nullptr)},
      {"engine", engine_name(r.engine)},
      {"kv_type", kv_type_name(r.kv_type)},
      {"context", req.context},
      {"concurrency", req.concurrency},
      {"tensor_parallel",
       optional_number(req.tensor_parallel ? std::optional<uint64_t>(*req.tensor_parallel)
                                           : std::nullopt)},
      {"gpus", req.gpus.count},
      {"gpu_bytes", req.gpus.bytes_each},
      {"gpu_bytes_each", std::move(cards)},
      {"memory_fraction", req.memory_fraction},
      {"overhead_bytes_per_gpu", req.overhead_per_gpu},
      {"kv_bytes_per_token", bytes_number(r.kv.bytes_per_token())},
      {"kv_bytes_per_token_sliding", bytes_number(r.kv.sliding_bytes_per_token)},
      {"state_bytes_per_sequence", r.kv.state_bytes_per_sequence},
      {"bytes_per_sequence", bytes_number(r.kv.bytes_per_sequence(req.context))},
      {"bytes_needed", bytes_number(r.topology.bytes_needed)},
      {"max_context", optional_number(r.topology.max_context)},
      {"model", std::move(model)},
      {"topology", std::move(topology)},
      {"commands",
       json::object{
           {"llamacpp", r.launch.llamacpp ? json::value(*r.launch.llamacpp) : json::value(nullptr)},
           {"vllm", r.launch.vllm ? json::value(*r.launch.vllm) : json::value(nullptr)},
       }},
      {"fleet_yaml", r.launch.fleet_yaml},
      {"advice", std::move(advice)},
      {"warnings", std::move(warnings)},
      // The commands below are ready to paste only when the plan fits.
      {"commands_ready", r.topology.fits && !r.blocked},
      {"gpu_model", r.card ? json::value(r.card->key) : json::value(nullptr)},
      {"notes", std::move(notes)},
  };
}

}  // namespace switchyard::plan
