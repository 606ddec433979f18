#include <gtest/gtest.h>

#include <boost/asio.hpp>

#include "fleet/fleet.h"

namespace switchyard::fleet {
namespace {

// A fleet of external engines that is never started: the outlier rules act on
// its instance table alone.
struct OutlierTest : testing::Test {
  OutlierTest() {
    config::FleetConfig config;
    for (int i = 0; i < 4; ++i) {
      config::InstanceConfig inst;
      inst.name = "e" + std::to_string(i);
      inst.model = "m";
      inst.url = "http://127.0.0.1:9";
      config.instances.push_back(inst);
    }
    fleet = std::make_unique<Fleet>(io.get_executor(), config, "switchyard");
    for (auto& inst : fleet->instances()) inst->state = InstanceState::ready;
  }
  InstanceState state(std::size_t i) const { return fleet->instances()[i]->state; }
  boost::asio::io_context io;
  std::unique_ptr<Fleet> fleet;
};

TEST_F(OutlierTest, AtMostHalfOfAModelsInstancesAreEjected) {
  fleet->report_failure(0, "reset");
  fleet->report_failure(1, "reset");
  fleet->report_failure(2, "reset");
  EXPECT_EQ(state(0), InstanceState::ejected);
  EXPECT_EQ(state(1), InstanceState::ejected);
  EXPECT_EQ(state(2), InstanceState::ready) << "a third of four would be more than half";
}

TEST_F(OutlierTest, EjectionsAccumulateUntilARequestSucceeds) {
  auto& inst = *fleet->instances()[0];
  fleet->report_failure(0, "reset");
  EXPECT_EQ(inst.ejections, 1);
  inst.state = InstanceState::ready;  // a probe took it back
  inst.on_trial = true;
  EXPECT_EQ(inst.capacity(), 1);
  fleet->report_failure(0, "reset again");
  EXPECT_EQ(inst.ejections, 2);
  EXPECT_FALSE(inst.on_trial);
  inst.state = InstanceState::ready;
  inst.on_trial = true;
  fleet->report_success(0);
  EXPECT_EQ(inst.ejections, 0);
  EXPECT_FALSE(inst.on_trial);
}

}  // namespace
}  // namespace switchyard::fleet
