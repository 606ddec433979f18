#include "plan/device_breakdown.h"

#include <algorithm>
#include <cmath>

namespace switchyard::plan {
namespace {

// One layer's cache for `slots` sequences at `context` tokens.
double layer_kv(const ModelFacts& model, KvType type, size_t layer, uint64_t context,
                uint32_t slots) {
  ModelFacts one = model;
  one.layers = {model.layers[layer]};
  return kv_footprint(one, type).bytes_per_sequence(context) * slots;
}

double output_weight(const ModelFacts& m) {
  return m.layer_weights.empty() ? 0.0 : static_cast<double>(m.output_weights);
}
double input_weight(const ModelFacts& m) {
  return m.layer_weights.empty() ? 0.0 : static_cast<double>(m.input_weights);
}

}  // namespace

double layer_weight(const ModelFacts& m, size_t layer) {
  if (!m.layer_weights.empty()) return static_cast<double>(m.layer_weights[layer]);
  return m.layers.empty() ? 0.0
                          : static_cast<double>(m.weights_bytes.value_or(0)) / m.layers.size();
}

ModelFacts offloaded_part(const ModelFacts& model, uint32_t gpu_layers) {
  const uint32_t n_layer = static_cast<uint32_t>(model.layers.size());
  const uint32_t start = n_layer + 1 > gpu_layers ? n_layer + 1 - gpu_layers : 0;
  ModelFacts part = model;
  part.layers.assign(model.layers.begin() + std::min(start, n_layer), model.layers.end());
  // The output layer takes the first of the N slots (il = n_layer >= i_gpu_start whenever N >= 1).
  double weights = gpu_layers > 0 ? output_weight(model) : 0.0;
  for (uint32_t il = start; il < n_layer; ++il) weights += layer_weight(model, il);
  part.weights_bytes = static_cast<uint64_t>(std::llround(weights));
  if (!model.layer_weights.empty()) {
    part.layer_weights.assign(model.layer_weights.begin() + std::min(start, n_layer),
                              model.layer_weights.end());
  } else {
    part.layer_weights.clear();
  }
  part.input_weights = 0;
  return part;
}

Breakdown device_breakdown(const BreakdownInput& in) {
  const ModelFacts& m = *in.model;
  const uint32_t n_layer = static_cast<uint32_t>(m.layers.size());
  const uint32_t n_gpu = static_cast<uint32_t>(in.cards.size());
  Breakdown b;
  b.devices.resize(n_gpu + 1);
  b.devices[0].name = "CPU";
  for (uint32_t i = 0; i < n_gpu; ++i) {
    DeviceUse& d = b.devices[i + 1];
    d.name = "GPU" + std::to_string(i);
    d.capacity = in.memory_fraction * static_cast<double>(in.cards[i]) -
                 static_cast<double>(in.overhead_per_gpu);
  }
  DeviceUse& cpu = b.devices[0];
  auto gpu = [&](uint32_t i) -> DeviceUse& { return b.devices[i + 1]; };

  if (in.engine == Engine::kVllm) {
    // vLLM loads everything onto the cards; its activations come out of the utilization fraction.
    const bool pipeline = in.layout == Layout::kLayerSplit;
    for (uint32_t il = 0; il < n_layer; ++il) {
      const double kv = layer_kv(m, in.kv_type, il, in.context, in.slots);
      if (pipeline) {
        DeviceUse& d = gpu(std::min(n_gpu - 1, il * n_gpu / n_layer));
        d.weights += layer_weight(m, il);
        d.kv += kv;
        ++d.layers;
      } else {
        for (uint32_t g = 0; g < n_gpu; ++g) {
          gpu(g).weights += layer_weight(m, il) / n_gpu;
          gpu(g).kv += kv / n_gpu;
          ++gpu(g).layers;
        }
      }
    }
    const uint32_t first = 0, last = n_gpu - 1;
    for (uint32_t g = 0; g < n_gpu; ++g) {
      if (!pipeline || g == first) gpu(g).weights += input_weight(m) / (pipeline ? 1 : n_gpu);
      if (!pipeline || g == last) gpu(g).weights += output_weight(m) / (pipeline ? 1 : n_gpu);
      gpu(g).input_layer = !pipeline || g == first;
      gpu(g).output_layer = !pipeline || g == last;
    }
    return b;
  }

  // llama.cpp.
  const uint32_t ngl = std::min(in.gpu_layers, n_layer + 1);
  const uint32_t start = n_layer + 1 - ngl;
  b.compute = estimate_compute(
      ComputeInput{&m, in.context * in.slots, in.slots, in.n_ubatch, /*flash_attention=*/true});
  cpu.input_layer = true;
  cpu.weights += input_weight(m);
  cpu.compute = b.compute.host + b.compute.host_output;

  const bool row = in.layout == Layout::kTensorParallel;
  // Cumulative --tensor-split shares: the given ones, else the plan's command's (each card's size
  // in GiB).
  const bool given = in.tensor_split.size() == n_gpu;
  std::vector<double> splits(n_gpu);
  double sum = 0;
  for (uint32_t g = 0; g < n_gpu; ++g) {
    sum += given        ? in.tensor_split[g]
           : n_gpu == 1 ? 1.0
                        : std::max<double>(1.0, static_cast<double>(in.cards[g] >> 30));
    splits[g] = sum;
  }
  for (double& s : splits) s /= sum;
  auto place = [&](uint32_t il) -> DeviceUse* {
    if (n_gpu == 0 || il < start) return &cpu;
    const float x = static_cast<float>(il - start) / static_cast<float>(ngl);
    const auto it = std::upper_bound(splits.begin(), splits.end(), x);
    return &gpu(static_cast<uint32_t>(std::min<size_t>(it - splits.begin(), n_gpu - 1)));
  };

  for (uint32_t il = 0; il <= n_layer; ++il) {
    DeviceUse* d = place(il);
    const double weights = il < n_layer ? layer_weight(m, il) : output_weight(m);
    const double kv = il < n_layer ? layer_kv(m, in.kv_type, il, in.context, in.slots) : 0.0;
    if (row && d != &cpu) {
      // Row split: matrices spread by the split shares, the cache on the main GPU.
      for (uint32_t g = 0; g < n_gpu; ++g) {
        gpu(g).weights += weights * (splits[g] - (g ? splits[g - 1] : 0.0));
      }
      d = &gpu(0);
      d->kv += kv;
    } else {
      d->weights += weights;
      d->kv += kv;
    }
    if (il < n_layer) {
      ++d->layers;
    } else {
      d->output_layer = true;
    }
  }
  for (uint32_t g = 0; g < n_gpu; ++g) {
    DeviceUse& d = gpu(g);
    if (d.output_layer) {
      d.compute = b.compute.output_card;
    } else if (d.layers > 0) {
      d.compute = b.compute.layer_card;
    }
  }
  // Layers left on the CPU compute there too.
  if (cpu.layers > 0)
    cpu.compute += cpu.output_layer ? b.compute.output_card : b.compute.layer_card;
  return b;
}

}  // namespace switchyard::plan
