#include "cli/service_notice.h"

#include <gtest/gtest.h>

namespace switchyard::cli {
namespace {

using fleet::InstanceState;

std::unique_ptr<fleet::Instance> instance(InstanceState state, bool supervised = true,
                                          bool parked = false) {
  auto inst = std::make_unique<fleet::Instance>();
  inst->config.name = "i";
  if (supervised)
    inst->config.command = "llama-server --port ${PORT}";
  else
    inst->config.url = "http://127.0.0.1:9";
  inst->state = state;
  inst->causes.set(fleet::AdminCause::profile_parked, parked);
  return inst;
}

TEST(ServiceNotice, ReadyOnceEveryStartedEngineHasHadItsFirstStart) {
  std::vector<std::unique_ptr<fleet::Instance>> fleet;
  fleet.push_back(instance(InstanceState::ready));
  fleet.push_back(instance(InstanceState::starting));
  EXPECT_FALSE(first_health_pass_done(fleet));
  fleet[1]->state = InstanceState::restarting;  // failed its start: the supervisor goes on
  EXPECT_TRUE(first_health_pass_done(fleet));
  fleet[1]->state = InstanceState::down;
  EXPECT_TRUE(first_health_pass_done(fleet));
}

TEST(ServiceNotice, ExternalEnginesAndParkedOnesAreNotWaitedFor) {
  std::vector<std::unique_ptr<fleet::Instance>> fleet;
  fleet.push_back(instance(InstanceState::ready));
  fleet.push_back(instance(InstanceState::starting, /*supervised=*/false));
  fleet.push_back(instance(InstanceState::stopped, true, true));
  EXPECT_TRUE(first_health_pass_done(fleet));
}

TEST(ServiceNotice, StatusCountsTheInstancesInService) {
  std::vector<std::unique_ptr<fleet::Instance>> fleet;
  fleet.push_back(instance(InstanceState::ready));
  fleet.push_back(instance(InstanceState::ejected));
  fleet.push_back(instance(InstanceState::stopped, true, true));
  EXPECT_EQ(instances_ready_text(fleet), "1/2 instance(s) ready");
}

}  // namespace
}  // namespace switchyard::cli
