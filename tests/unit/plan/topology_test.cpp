#include "plan/topology.h"

#include <gtest/gtest.h>

#include <cmath>
#include "../support.h"

namespace switchyard::plan {
namespace {

using namespace switchyard::testing_support;

KvFootprint per_token(double bytes) {
  KvFootprint kv;
  kv.full_bytes_per_token = bytes;
  return kv;
}

CapacityRequest box(uint32_t cards, double gib_each, double weights_gib) {
  CapacityRequest r;
  r.gpus = {cards, static_cast<uint64_t>(gib_each * kGiB), {}};
  r.weights_bytes = static_cast<uint64_t>(weights_gib * kGiB);
  r.context = 32768;
  r.concurrency = 1;
  return r;
}

TEST(PlanTopology, OneInstancePerCardWhenACardHoldsIt) {
  CapacityRequest r = box(4, 32, 16.5);
  r.concurrency = 8;
  const TopologyPlan plan = plan_topology(r, per_token(65536));
  EXPECT_TRUE(plan.fits);
  EXPECT_EQ(plan.chosen.layout, Layout::kReplicas);
  EXPECT_EQ(plan.chosen.instances, 4u);
  EXPECT_EQ(plan.chosen.slots_per_instance, 2u);
  EXPECT_DOUBLE_EQ(plan.chosen.pool_bytes_per_instance, (32 - 16.5) * kGiB);
  EXPECT_EQ(*plan.chosen.pool_tokens_per_instance,
            static_cast<uint64_t>(std::floor((32 - 16.5) * kGiB / 65536)));
  EXPECT_DOUBLE_EQ(*plan.chosen.max_concurrency_per_instance,
                   (32 - 16.5) * kGiB / (65536.0 * 32768));
}

// "A 60 GB model: split two cards, run a second instance on the other two."
TEST(PlanTopology, FewestCardsInALayerSplitWhenOneCardIsTooSmall) {
  const TopologyPlan plan = plan_topology(box(4, 32, 56), per_token(1024));
  EXPECT_TRUE(plan.fits);
  EXPECT_EQ(plan.chosen.layout, Layout::kLayerSplit);
  EXPECT_EQ(plan.chosen.gpus_per_instance, 2u);
  EXPECT_EQ(plan.chosen.instances, 2u);
  EXPECT_EQ(plan.chosen.idle_gpus, 0u);

  // Two cards hold it, the third would sit idle: the split takes all three.
  const TopologyPlan three = plan_topology(box(3, 32, 56), per_token(1024));
  EXPECT_EQ(three.chosen.gpus_per_instance, 3u);
  EXPECT_EQ(three.chosen.instances, 1u);
  EXPECT_EQ(three.chosen.idle_gpus, 0u);
  EXPECT_EQ(three.chosen.widened_from, 2u);
}

// Seven cards hold it: pipeline parallel 8, not 7 and an idle card.
TEST(PlanTopology, EightCardsNeverLeaveOneIdle) {
  const TopologyPlan plan = plan_topology(box(8, 24, 24 * 6.5), per_token(1024));
  EXPECT_TRUE(plan.fits);
  EXPECT_EQ(plan.chosen.layout, Layout::kLayerSplit);
  EXPECT_EQ(plan.chosen.gpus_per_instance, 8u);
  EXPECT_EQ(plan.chosen.idle_gpus, 0u);
  EXPECT_EQ(plan.chosen.widened_from, 7u);
  EXPECT_DOUBLE_EQ(plan.chosen.pool_bytes_per_instance, (8 - 6.5) * 24 * kGiB);
  // Seven cards of which two hold it: three instances of two, one card left (no wider split
  // keeps three instances).
  const TopologyPlan seven = plan_topology(box(7, 32, 56), per_token(1024));
  EXPECT_EQ(seven.chosen.gpus_per_instance, 2u);
  EXPECT_EQ(seven.chosen.instances, 3u);
  EXPECT_EQ(seven.chosen.idle_gpus, 1u);
}

TEST(PlanTopology, MixedCardsAreTakenLargestFirstAndTheSmallestInstanceDecides) {
  CapacityRequest r = box(1, 1, 20);
  r.gpus = *parse_gpu_spec("2x24G,2x32G");
  EXPECT_EQ(r.gpus.count, 4u);
  EXPECT_EQ(r.gpus.bytes_each, static_cast<uint64_t>(24 * kGiB));
  const TopologyPlan plan = plan_topology(r, per_token(1024));
  EXPECT_EQ(plan.chosen.layout, Layout::kReplicas);
  EXPECT_DOUBLE_EQ(plan.chosen.pool_bytes_per_instance, (24 - 20) * kGiB);
  // 30 GiB: no card alone; pairs (32+32, 24+24) in a layer split, the 24s decide.
  r.weights_bytes = static_cast<uint64_t>(30 * kGiB);
  const TopologyPlan split = plan_topology(r, per_token(1024));
  EXPECT_TRUE(split.fits);
  EXPECT_EQ(split.chosen.gpus_per_instance, 2u);
  EXPECT_EQ(split.chosen.instances, 2u);
  EXPECT_DOUBLE_EQ(split.chosen.pool_bytes_per_instance, (48 - 30) * kGiB);
  // vLLM splits the weights evenly: each pair is bounded by its smaller card.
  r.gpus = *parse_gpu_spec("32G,24G");
  r.even_split = true;
  EXPECT_DOUBLE_EQ(plan_topology(r, per_token(1024)).chosen.pool_bytes_per_instance,
                   (48 - 30) * kGiB);
  r.even_split = false;
  EXPECT_DOUBLE_EQ(plan_topology(r, per_token(1024)).chosen.pool_bytes_per_instance,
                   (56 - 30) * kGiB);
}

TEST(PlanTopology, TensorParallelOnlyWhenAsked) {
  CapacityRequest r = box(4, 32, 16);
  r.tensor_parallel = 2;
  const TopologyPlan plan = plan_topology(r, per_token(1024));
  EXPECT_TRUE(plan.fits);
  EXPECT_EQ(plan.chosen.layout, Layout::kTensorParallel);
  EXPECT_EQ(plan.chosen.gpus_per_instance, 2u);
  EXPECT_EQ(plan.chosen.instances, 2u);
}

TEST(PlanTopology, MemoryFractionAndOverheadComeOffEveryCard) {
  CapacityRequest r = box(2, 10, 4);
  r.memory_fraction = 0.9;
  r.overhead_per_gpu = static_cast<uint64_t>(kGiB);
  const TopologyPlan plan = plan_topology(r, per_token(1));
  EXPECT_DOUBLE_EQ(plan.chosen.pool_bytes_per_instance, (0.9 * 10 - 1 - 4) * kGiB);
}

// The field report: 180000 tokens x 24 sequences x 32 KiB = ~132 GiB > 4 x 32 GiB.
TEST(PlanTopology, TheFieldCaseDoesNotFit) {
  CapacityRequest r = box(4, 32, 0);
  r.context = 180000;
  r.concurrency = 24;
  r.memory_fraction = 0.9;
  const KvFootprint kv = per_token(32768);
  const TopologyPlan plan = plan_topology(r, kv);
  EXPECT_FALSE(plan.fits);
  EXPECT_NEAR(plan.bytes_needed / kGiB, 131.8, 0.05);
  EXPECT_GT(plan.bytes_needed, 128 * kGiB);
  // Nothing fits, so the advice shows the roomiest layout: all four cards in one instance.
  EXPECT_EQ(plan.chosen.gpus_per_instance, 4u);
  EXPECT_EQ(plan.max_sequences, static_cast<uint64_t>(0.9 * 128 * kGiB / (180000.0 * 32768)));
  EXPECT_EQ(plan.max_sequences, 20u);
  ASSERT_TRUE(plan.max_context);
  // 24 sequences fit up to floor(0.9 * 128 GiB / (24 * 32 KiB)) tokens.
  EXPECT_EQ(*plan.max_context, static_cast<uint64_t>(0.9 * 128 * kGiB / (24.0 * 32768)));
}

TEST(PlanTopology, WeightsLargerThanTheBox) {
  const TopologyPlan plan = plan_topology(box(4, 32, 176), per_token(1024));
  EXPECT_FALSE(plan.fits);
  EXPECT_LT(plan.chosen.pool_bytes_per_instance, 0);
  EXPECT_EQ(plan.max_sequences, 0u);
  EXPECT_EQ(plan.max_context, 0u);
}

TEST(PlanTopology, ContextIsUnboundedWhenNothingGrowsWithIt) {
  KvFootprint kv;
  kv.state_bytes_per_sequence = 1 << 20;
  const TopologyPlan plan = plan_topology(box(1, 8, 1), kv);
  EXPECT_TRUE(plan.fits);
  EXPECT_FALSE(plan.max_context.has_value());
  EXPECT_FALSE(plan.chosen.pool_tokens_per_instance.has_value());
}

}  // namespace
}  // namespace switchyard::plan
