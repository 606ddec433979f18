// What the router reads of an instance counts its changes (route_revision):
// the router rebuilds its kept candidates when, and only when, it moves.
#include "fleet/instance.h"

#include <gtest/gtest.h>

namespace switchyard::fleet {
namespace {

std::uint64_t revision() {
  return route_revision.load();
}

TEST(InstanceTest, ANewValueOfWhatTheRouterReadsIsARouteChangeAndTheSameValueIsNot) {
  Instance inst;
  auto before = revision();
  inst.state = InstanceState::starting;
  inst.slots = 1;
  inst.on_trial = false;
  inst.engine_sleep = Instance::EngineSleep::awake;
  inst.kv_tokens = 0;
  EXPECT_EQ(revision(), before) << "nothing changed";

  inst.state = InstanceState::ready;
  EXPECT_EQ(revision(), before + 1);
  inst.slots = 4;
  inst.on_trial = true;
  inst.engine_sleep = Instance::EngineSleep::asleep;
  inst.kv_tokens = 65536;
  ++inst.generation;
  EXPECT_EQ(revision(), before + 6);
  EXPECT_EQ(inst.capacity(), 1) << "on trial";
  EXPECT_TRUE(inst.routable());
}

TEST(InstanceTest, AdminCausesCountWhenTheSetChanges) {
  Instance inst;
  const auto before = revision();
  EXPECT_TRUE(inst.causes.set(AdminCause::operator_drain, true));
  EXPECT_FALSE(inst.causes.set(AdminCause::operator_drain, true));
  EXPECT_EQ(revision(), before + 1);
  EXPECT_FALSE(inst.routable());
  AdminCauses none;
  inst.causes = none;
  EXPECT_EQ(revision(), before + 2);
  inst.causes = none;
  EXPECT_EQ(revision(), before + 2);
}

}  // namespace
}  // namespace switchyard::fleet
