// A fleet's instance table for tests of what reads it (router, queue).
#pragma once

#include <memory>
#include <string>

#include "gateway/router.h"

namespace switchyard::gateway::testing_support {

inline fleet::Instance& add_instance(InstanceTable& table, std::string model, int slots,
                                     fleet::InstanceState state = fleet::InstanceState::ready) {
  auto inst = std::make_unique<fleet::Instance>();
  inst->index = table.size();
  inst->config.name = "i" + std::to_string(table.size());
  inst->config.model = std::move(model);
  inst->slots = slots;
  inst->state = state;
  table.push_back(std::move(inst));
  return *table.back();
}

}  // namespace switchyard::gateway::testing_support
