// A finished plan and its two renderings: a table for people and JSON for machines (field names
// are a stable interface, documented in docs/plan.md).
#pragma once

#include <boost/json/object.hpp>

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "plan/device_breakdown.h"
#include "plan/engine_flags.h"
#include "plan/gpu_cards.h"
#include "plan/kv_math.h"
#include "plan/model_facts.h"
#include "plan/topology.h"

namespace switchyard::plan {

struct PlanReport {
  ModelFacts model;
  Engine engine = Engine::kLlamaCpp;
  KvType kv_type = KvType::kF16;
  CapacityRequest request;  // gpus, context, concurrency, memory model, weights
  KvFootprint kv;
  TopologyPlan topology;
  LaunchPlan launch;
  // One instance of the chosen layout, card by card (the first instance's cards).
  Breakdown breakdown;
  std::optional<uint32_t> gpu_layers;  // --ngl when partial
  uint32_t n_ubatch = 512;
  const GpuCard* card = nullptr;  // --gpu
  // Repeating layers on the cards (all but those --ngl keeps in RAM).
  size_t layers_on_gpus() const {
    return model.layers.size() - (breakdown.devices.empty() ? 0 : breakdown.devices.front().layers);
  }
  // A known issue makes the planned layout fail on this card: the commands are not ready.
  bool blocked = false;
  std::vector<std::string> notes;     // assumptions, beyond the model's own notes
  std::vector<std::string> warnings;  // what will go wrong as asked (shown before the advice)
};

// Plain-language advice for the plan: what to run, and what to change when it does not fit.
std::vector<std::string> plan_advice(const PlanReport& report);

void write_plan_text(const PlanReport& report, std::ostream& out);
boost::json::object plan_to_json(const PlanReport& report);

}  // namespace switchyard::plan
