#include "profiles/eviction.h"

#include <gtest/gtest.h>
#include "../support.h"

namespace switchyard::profiles {
namespace {

using namespace switchyard::testing_support;

Resident loaded(std::size_t index, std::vector<std::string> gpus, std::uint64_t memory,
                double reload_seconds = 20, double idle_seconds = 0, bool busy = false) {
  Resident r;
  r.index = index;
  r.gpus = std::move(gpus);
  r.memory = memory;
  r.present = true;
  r.evictable = true;
  r.busy = busy;
  r.reload_seconds = reload_seconds;
  r.idle_seconds = idle_seconds;
  return r;
}

Resident wanted(std::size_t index, std::vector<std::string> gpus, std::uint64_t memory) {
  Resident r = loaded(index, std::move(gpus), memory);
  r.present = false;
  r.evictable = false;
  return r;
}

TEST(Eviction, NothingGoesWhenItFits) {
  const GpuMemory gpus{{"0", 24 * kGiB}};
  std::vector<Resident> all{loaded(0, {"0"}, 10 * kGiB), wanted(1, {"0"}, 12 * kGiB)};
  EXPECT_EQ(choose_evictions(all, all[1], gpus), std::vector<std::size_t>{});
  EXPECT_EQ(memory_in_use(all).at("0"), 10 * kGiB);
}

TEST(Eviction, TheCheapestSetByLoadTimeAndRecentUse) {
  const GpuMemory gpus{{"0", 24 * kGiB}};
  // Two small ones or the big one would do; the big one was idle for long.
  std::vector<Resident> all{loaded(0, {"0"}, 6 * kGiB, 10), loaded(1, {"0"}, 6 * kGiB, 10),
                            loaded(2, {"0"}, 12 * kGiB, 40, 30 * 60), wanted(3, {"0"}, 12 * kGiB)};
  EXPECT_EQ(choose_evictions(all, all[3], gpus), std::vector<std::size_t>{2});
  // Used just now, the big one costs its whole load time: the two small ones
  // go instead (20 s of loads against 40).
  all[2].idle_seconds = 0;
  EXPECT_EQ(choose_evictions(all, all[3], gpus), (std::vector<std::size_t>{0, 1}));
}

TEST(Eviction, NeverAnInstanceTheCallerKeeps) {
  const GpuMemory gpus{{"0", 24 * kGiB}};
  std::vector<Resident> all{loaded(0, {"0"}, 20 * kGiB), wanted(1, {"0"}, 12 * kGiB)};
  all[0].evictable = false;  // always-on, or busy within min_resident
  EXPECT_FALSE(choose_evictions(all, all[1], gpus));
}

TEST(Eviction, AnIdleOneBeforeABusyOneEvenIfDearer) {
  const GpuMemory gpus{{"0", 24 * kGiB}};
  std::vector<Resident> all{loaded(0, {"0"}, 12 * kGiB, 5, 0, /*busy=*/true),
                            loaded(1, {"0"}, 12 * kGiB, 60), wanted(2, {"0"}, 12 * kGiB)};
  EXPECT_EQ(choose_evictions(all, all[2], gpus), std::vector<std::size_t>{1});
}

TEST(Eviction, MemoryIsCountedOnEveryGpuOfAMultiGpuInstance) {
  const GpuMemory gpus{{"0", 24 * kGiB}, {"1", 24 * kGiB}};
  // tp2 holds 16 kGiB on each card; a 10 kGiB model fits beside it on either.
  std::vector<Resident> all{loaded(0, {"0", "1"}, 16 * kGiB), wanted(1, {"1"}, 8 * kGiB),
                            wanted(2, {"1"}, 10 * kGiB)};
  EXPECT_EQ(memory_in_use(all).at("0"), 16 * kGiB);
  EXPECT_EQ(memory_in_use(all).at("1"), 16 * kGiB);
  EXPECT_EQ(choose_evictions(all, all[1], gpus), std::vector<std::size_t>{});
  EXPECT_EQ(choose_evictions(all, all[2], gpus), std::vector<std::size_t>{0});
  // A model over both cards needs room on each.
  std::vector<Resident> two{loaded(0, {"0"}, 20 * kGiB), loaded(1, {"1"}, 4 * kGiB),
                            wanted(2, {"0", "1"}, 16 * kGiB)};
  EXPECT_EQ(choose_evictions(two, two[2], gpus), std::vector<std::size_t>{0});
}

TEST(Eviction, UnknownMemoryMeansTheGpuIsOnesAlone) {
  std::vector<Resident> all{loaded(0, {"0"}, 1 * kGiB), wanted(1, {"0"}, 1 * kGiB),
                            wanted(2, {"1"}, 1 * kGiB)};
  all[0].memory.reset();
  EXPECT_EQ(choose_evictions(all, all[1], {}), std::vector<std::size_t>{0});
  EXPECT_EQ(choose_evictions(all, all[2], {}), std::vector<std::size_t>{});  // another card
}

TEST(Eviction, CostFallsWithIdleMinutes) {
  EXPECT_DOUBLE_EQ(eviction_cost(loaded(0, {"0"}, kGiB, 30, 30)), 30);
  EXPECT_DOUBLE_EQ(eviction_cost(loaded(0, {"0"}, kGiB, 30, 120)), 10);
}

}  // namespace
}  // namespace switchyard::profiles
