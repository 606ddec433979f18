#include "plan/topology.h"

#include <algorithm>
#include <cmath>

namespace switchyard::plan {
namespace {

InstanceLayout evaluate(const CapacityRequest& request, const KvFootprint& kv, uint32_t group,
                        Layout layout) {
  InstanceLayout result;
  result.layout = layout;
  result.gpus_per_instance = group;
  result.instances = request.gpus.count / group;
  result.idle_gpus = request.gpus.count % group;
  result.slots_per_instance = (request.concurrency + result.instances - 1) / result.instances;

  // Cards are taken largest first, `group` at a time; the smallest instance decides.
  const auto usable = [&](uint32_t card) {
    const uint64_t bytes =
        request.gpus.cards.empty() ? request.gpus.bytes_each : request.gpus.cards[card];
    return request.memory_fraction * static_cast<double>(bytes) -
           static_cast<double>(request.overhead_per_gpu);
  };
  double pool = 0;
  for (uint32_t i = 0; i < result.instances; ++i) {
    double sum = 0, smallest = usable(i * group);
    for (uint32_t card = i * group; card < (i + 1) * group; ++card) {
      sum += usable(card);
      smallest = std::min(smallest, usable(card));
    }
    double memory = request.even_split ? smallest * group : sum;
    if (request.compute_bytes)
      memory -= request.compute_bytes(layout, group, result.slots_per_instance);
    const double instance_pool = memory - static_cast<double>(request.weights_bytes);
    pool = i == 0 ? instance_pool : std::min(pool, instance_pool);
  }
  result.pool_bytes_per_instance = pool;

  if (kv.bytes_per_token() > 0) {
    result.pool_tokens_per_instance =
        pool > 0 ? static_cast<uint64_t>(std::floor(pool / kv.bytes_per_token())) : 0;
  }
  const double per_sequence = kv.bytes_per_sequence(request.context);
  if (per_sequence > 0) result.max_concurrency_per_instance = pool > 0 ? pool / per_sequence : 0.0;
  result.fits = pool > 0 && pool >= per_sequence * result.slots_per_instance;
  return result;
}

// The longest context at which each instance of `layout` holds its slots.
std::optional<uint64_t> max_context(const InstanceLayout& layout, const KvFootprint& kv) {
  const double slots = layout.slots_per_instance;
  auto holds = [&](uint64_t context) {
    return kv.bytes_per_sequence(context) * slots <= layout.pool_bytes_per_instance;
  };
  if (layout.pool_bytes_per_instance <= 0 || !holds(1)) return 0;
  constexpr uint64_t kUnbounded = uint64_t{1} << 40;
  if (kv.full_bytes_per_token == 0 && holds(kUnbounded)) return std::nullopt;
  uint64_t lo = 1, hi = kUnbounded;  // holds(lo), !holds(hi)
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (holds(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace

std::string_view layout_name(Layout layout) {
  switch (layout) {
    case Layout::kReplicas:
      return "replicas";
    case Layout::kLayerSplit:
      return "layer_split";
    case Layout::kTensorParallel:
      return "tensor_parallel";
  }
  return "replicas";
}

TopologyPlan plan_topology(const CapacityRequest& request, const KvFootprint& kv) {
  TopologyPlan plan;
  plan.bytes_needed = kv.bytes_per_sequence(request.context) * request.concurrency;

  if (request.tensor_parallel && *request.tensor_parallel > 1) {
    plan.chosen = evaluate(request, kv, *request.tensor_parallel, Layout::kTensorParallel);
  } else {
    // The fewest cards per instance that hold it; every extra card in a split adds sync points.
    bool found = false;
    for (uint32_t group = 1; group <= request.gpus.count && !found; ++group) {
      plan.chosen =
          evaluate(request, kv, group, group == 1 ? Layout::kReplicas : Layout::kLayerSplit);
      found = plan.chosen.fits;
    }
    // Cards the division leaves over join the split (7 of 8 becomes 8 of 8) when the instances
    // stay as many: an idle card holds nothing, a card in the split holds KV.
    if (found && plan.chosen.idle_gpus > 0) {
      const uint32_t wider = request.gpus.count / plan.chosen.instances;
      InstanceLayout widened = evaluate(request, kv, wider, Layout::kLayerSplit);
      widened.widened_from = plan.chosen.gpus_per_instance;
      if (widened.fits && widened.instances == plan.chosen.instances &&
          widened.idle_gpus < plan.chosen.idle_gpus)
        plan.chosen = widened;
    }
  }
  plan.fits = plan.chosen.fits;
  if (plan.chosen.max_concurrency_per_instance) {
    plan.max_sequences =
        static_cast<uint64_t>(std::floor(*plan.chosen.max_concurrency_per_instance)) *
        plan.chosen.instances;
  }
  plan.max_context = max_context(plan.chosen, kv);
  return plan;
}

}  // namespace switchyard::plan
