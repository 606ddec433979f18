#include "profiles/swap_order.h"

#include <gtest/gtest.h>

namespace switchyard::profiles {
namespace {

using namespace std::chrono_literals;
using Policy = config::SwappingOptions::Policy;

config::SwappingOptions options(Policy policy) {
  config::SwappingOptions o;
  o.policy = policy;
  o.max_wait = 120s;
  o.min_resident = 30s;
  return o;
}

TEST(SwapOrder, BatchLoadsTheModelWithMostWaitingFifoTheOldest) {
  // B has waited longest with one request; C has three.
  const std::vector<ModelWait> waits{{"B", 1, 40, 20}, {"C", 3, 10, 20}};
  EXPECT_EQ(swap_order(waits, options(Policy::batch)), (std::vector<std::string>{"C", "B"}));
  EXPECT_EQ(swap_order(waits, options(Policy::fifo)), (std::vector<std::string>{"B", "C"}));
}

TEST(SwapOrder, AgingPutsAModelFirstAtMaxWaitMinusItsLoad) {
  const auto o = options(Policy::batch);
  ModelWait b{"B", 1, 99, 20};
  EXPECT_FALSE(aged(b, o.max_wait));
  EXPECT_EQ(swap_order({b, {"C", 5, 10, 20}}, o), (std::vector<std::string>{"C", "B"}));
  b.oldest_wait = 100;  // 120 s - 20 s of load
  EXPECT_TRUE(aged(b, o.max_wait));
  EXPECT_EQ(swap_order({b, {"C", 5, 10, 20}}, o), (std::vector<std::string>{"B", "C"}));
}

TEST(SwapOrder, UnderBatchAModelWithWorkStaysUntilAWaiterAgesAndMinResident) {
  const auto o = options(Policy::batch);
  const ModelWait young{"B", 4, 10, 20}, old{"B", 1, 110, 20};
  EXPECT_FALSE(may_preempt(young, 300, o));  // its queue is served first
  EXPECT_FALSE(may_preempt(old, 10, o));     // min_resident: no flapping
  EXPECT_TRUE(may_preempt(old, 31, o));
  // fifo swaps for whoever came first (drained, never cut).
  EXPECT_TRUE(may_preempt(young, 0, options(Policy::fifo)));
}

TEST(SwapOrder, ModelsWithoutWaitersAreNotLoaded) {
  EXPECT_TRUE(swap_order({{"B", 0, 0, 20}}, options(Policy::batch)).empty());
}

}  // namespace
}  // namespace switchyard::profiles
