// A finished plan and its two renderings: a table for people and JSON for machines (field names
// are a stable interface, documented in docs/plan.md).
#pragma once

#include <boost/json/object.hpp>

#include <iosfwd>
#include <string>
#include <vector>

#include "plan/engine_flags.h"
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
  std::vector<std::string> notes;     // assumptions, beyond the model's own notes
  std::vector<std::string> warnings;  // what will go wrong as asked (shown before the advice)
};

// Plain-language advice for the plan: what to run, and what to change when it does not fit.
std::vector<std::string> plan_advice(const PlanReport& report);

void write_plan_text(const PlanReport& report, std::ostream& out);
boost::json::object plan_to_json(const PlanReport& report);

}  // namespace switchyard::plan
