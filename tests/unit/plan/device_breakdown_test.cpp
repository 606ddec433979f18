#include "plan/device_breakdown.h"

#include <gtest/gtest.h>

#include "../support.h"
#include "plan/compute_buffers.h"

namespace switchyard::plan {
namespace {

using namespace switchyard::testing_support;

// A Mistral-7B-like dense model: 32 layers, 32 query heads and 8 KV heads of 128, n_embd 4096,
// n_ff 14336, vocabulary 32000.
ModelFacts dense_7b() {
  ModelFacts m;
  m.layers.assign(32, LayerFacts{LayerKind::kFullAttention, 8});
  m.key_length = m.value_length = m.key_length_swa = m.value_length_swa = 128;
  m.n_embd = 4096;
  m.n_head = 32;
  m.n_ff = 14336;
  m.n_vocab = 32000;
  return m;
}

// llama-server's own log for such a model at -ub 512, flash attention off
// (fedora-copr/logdetective PR #106): "CUDA0 compute buffer size = 164.00 MiB",
// "CUDA_Host compute buffer size = 12.01 MiB", "CUDA_Host output buffer size = 0.12 MiB" at
// -c 2048, and 2144.00 / 72.01 MiB at -c 32768.
TEST(ComputeBuffers, ReproducesLlamaServerLogWithoutFlashAttention) {
  const ModelFacts m = dense_7b();
  // -c 2048: KQ 32 heads x 2048 x 512 x 4 B = 128 MiB, mask 2048 x 512 x 4 B = 4 MiB, four
  // n_embd x 512 f32 activations = 32 MiB: 164 MiB. FFN (2 x 4096 + 2 x 14336) x 512 x 4 B = 72
  // MiB is smaller, and so are the logits (4096 + 32000) x 512 x 4 B = 70.5 MiB.
  ComputeEstimate e = estimate_compute(ComputeInput{&m, 2048, 1, 512, false});
  EXPECT_EQ(e.n_tokens, 512u);
  EXPECT_DOUBLE_EQ(e.layer_card_without_fa, 164 * kMiB);
  EXPECT_DOUBLE_EQ(e.layer_card, 164 * kMiB);
  EXPECT_DOUBLE_EQ(e.output_card, 164 * kMiB);
  // Host: the input embeddings 4096 x 512 x 4 B = 8 MiB + the f32 mask 4 MiB = 12 MiB; the output
  // buffer 32000 logits x 1 sequence x 4 B = 128,000 B = 0.12 MiB.
  EXPECT_DOUBLE_EQ(e.host, 12 * kMiB);
  EXPECT_DOUBLE_EQ(e.host_output, 128000);

  // -c 32768: KQ 2048 MiB + mask 64 MiB + 32 MiB = 2144 MiB; host 8 + 64 = 72 MiB.
  e = estimate_compute(ComputeInput{&m, 32768, 1, 512, false});
  EXPECT_DOUBLE_EQ(e.layer_card, 2144 * kMiB);
  EXPECT_DOUBLE_EQ(e.host, 72 * kMiB);
}

TEST(ComputeBuffers, FlashAttentionLeavesTheFfnAndTheLogits) {
  ModelFacts m = dense_7b();
  m.n_vocab = 151936;  // a Qwen vocabulary
  // -c 32768, flash attention: attention 2 x 4096 x 512 x 4 B (16 MiB) + Q and output
  // 32 x (128 + 128) x 512 x 4 B (16 MiB) + an f16 mask 32768 x 512 x 2 B (32 MiB) = 64 MiB;
  // the FFN's 72 MiB is larger. The output card holds the logits:
  // (4096 + 151936) x 512 x 4 B = 319,553,536 B (304.75 MiB).
  const ComputeEstimate e = estimate_compute(ComputeInput{&m, 32768, 4, 512, true});
  EXPECT_DOUBLE_EQ(e.layer_card, 72 * kMiB);
  EXPECT_DOUBLE_EQ(e.output_card, 319553536);
  EXPECT_DOUBLE_EQ(e.layer_card_without_fa, 2144 * kMiB);
  // Four sequences' logits on the host: 151936 x 4 x 4 B.
  EXPECT_DOUBLE_EQ(e.host_output, 151936.0 * 4 * 4);
  // A short context bounds the batch: -c 100 builds a 100-token graph.
  EXPECT_EQ(estimate_compute(ComputeInput{&m, 100, 1, 512, true}).n_tokens, 100u);
}

// Four layers of 1 GiB, an output layer of 0.5 GiB, token embeddings of 0.25 GiB; one KV head
// of 128 + 128 at f16 is 512 B per token per layer.
ModelFacts four_layers() {
  ModelFacts m;
  m.layers.assign(4, LayerFacts{LayerKind::kFullAttention, 1});
  m.key_length = m.value_length = m.key_length_swa = m.value_length_swa = 128;
  m.n_embd = 1024;
  m.n_head = 8;
  m.n_ff = 4096;
  m.n_vocab = 1000;
  m.layer_weights.assign(4, uint64_t{1} << 30);
  m.output_weights = uint64_t{1} << 29;
  m.input_weights = uint64_t{1} << 28;
  m.weights_bytes = 4 * (uint64_t{1} << 30) + (uint64_t{1} << 29) + (uint64_t{1} << 28);
  return m;
}

BreakdownInput input_for(const ModelFacts& m, std::vector<uint64_t> cards, Layout layout) {
  BreakdownInput in;
  in.model = &m;
  in.layout = layout;
  in.cards = std::move(cards);
  in.context = 1024;
  in.slots = 2;
  in.gpu_layers = 5;  // all four + the output layer
  in.overhead_per_gpu = uint64_t{1} << 30;
  return in;
}

TEST(DeviceBreakdown, LayerSplitFollowsLlamaCppPlacement) {
  const ModelFacts m = four_layers();
  const auto b = device_breakdown(input_for(m, {16ull << 30, 16ull << 30}, Layout::kLayerSplit));
  ASSERT_EQ(b.devices.size(), 3u);
  // Splits [0.5, 1]; layer il goes to upper_bound(il / 5): 0, 0.2, 0.4 on GPU0; 0.6 and the
  // output layer (0.8) on GPU1. The input layer stays on the CPU.
  const auto& cpu = b.devices[0];
  const auto& g0 = b.devices[1];
  const auto& g1 = b.devices[2];
  EXPECT_TRUE(cpu.input_layer);
  EXPECT_DOUBLE_EQ(cpu.weights, 0.25 * kGiB);
  EXPECT_EQ(g0.layers, 3u);
  EXPECT_FALSE(g0.output_layer);
  EXPECT_DOUBLE_EQ(g0.weights, 3 * kGiB);
  EXPECT_EQ(g1.layers, 1u);
  EXPECT_TRUE(g1.output_layer);
  EXPECT_DOUBLE_EQ(g1.weights, 1.5 * kGiB);
  // KV: 512 B x 1024 tokens x 2 slots = 1 MiB per layer.
  EXPECT_DOUBLE_EQ(g0.kv, 3 * kMiB);
  EXPECT_DOUBLE_EQ(g1.kv, 1 * kMiB);
  // Compute: the output card carries the logits' buffer, the other a layer's.
  EXPECT_DOUBLE_EQ(g0.compute, b.compute.layer_card);
  EXPECT_DOUBLE_EQ(g1.compute, b.compute.output_card);
  EXPECT_DOUBLE_EQ(cpu.compute, b.compute.host + b.compute.host_output);
  // Usable: 16 GiB - 1 GiB margin.
  EXPECT_DOUBLE_EQ(g0.capacity, 15 * kGiB);
  EXPECT_TRUE(g0.fits());
}

TEST(DeviceBreakdown, PartialOffloadKeepsTheFirstLayersInRam) {
  const ModelFacts m = four_layers();
  BreakdownInput in = input_for(m, {16ull << 30}, Layout::kReplicas);
  in.gpu_layers = 3;  // i_gpu_start = 4 + 1 - 3 = 2: layers 2, 3 and the output on the card
  const auto b = device_breakdown(in);
  const auto& cpu = b.devices[0];
  const auto& g0 = b.devices[1];
  EXPECT_EQ(cpu.layers, 2u);
  EXPECT_DOUBLE_EQ(cpu.weights, 2.25 * kGiB);
  EXPECT_DOUBLE_EQ(cpu.kv, 2 * kMiB);
  EXPECT_EQ(g0.layers, 2u);
  EXPECT_TRUE(g0.output_layer);
  EXPECT_DOUBLE_EQ(g0.weights, 2.5 * kGiB);
  // The CPU computes its own layers too.
  EXPECT_DOUBLE_EQ(cpu.compute, b.compute.host + b.compute.host_output + b.compute.layer_card);

  // The capacity plan sees only the GPU part.
  const ModelFacts part = offloaded_part(m, 3);
  EXPECT_EQ(part.layers.size(), 2u);
  EXPECT_EQ(*part.weights_bytes, 5 * (uint64_t{1} << 29));
  // -ngl 4: 4 + 1 - 4 = 1, layers 1-3 and the output; -ngl 5: everything but the input layer.
  EXPECT_EQ(offloaded_part(m, 4).layers.size(), 3u);
  EXPECT_EQ(*offloaded_part(m, 5).weights_bytes, 4 * (uint64_t{1} << 30) + (uint64_t{1} << 29));
}

TEST(DeviceBreakdown, RowSplitKeepsTheCacheOnTheMainGpu) {
  const ModelFacts m = four_layers();
  const auto b =
      device_breakdown(input_for(m, {16ull << 30, 16ull << 30}, Layout::kTensorParallel));
  const auto& g0 = b.devices[1];
  const auto& g1 = b.devices[2];
  // Weights split evenly (4.5 GiB / 2 each); all 4 MiB of KV and the compute on GPU0.
  EXPECT_DOUBLE_EQ(g0.weights, 2.25 * kGiB);
  EXPECT_DOUBLE_EQ(g1.weights, 2.25 * kGiB);
  EXPECT_DOUBLE_EQ(g0.kv, 4 * kMiB);
  EXPECT_DOUBLE_EQ(g1.kv, 0);
  EXPECT_DOUBLE_EQ(g1.compute, 0);
  EXPECT_DOUBLE_EQ(g0.compute, b.compute.output_card);
}

TEST(DeviceBreakdown, VllmShardsEvenly) {
  const ModelFacts m = four_layers();
  BreakdownInput in = input_for(m, {16ull << 30, 16ull << 30}, Layout::kTensorParallel);
  in.engine = Engine::kVllm;
  in.memory_fraction = 0.9;
  in.overhead_per_gpu = 0;
  auto b = device_breakdown(in);
  // Everything, the embeddings included, halved: 4.75 GiB / 2; KV 4 MiB / 2; no compute column.
  EXPECT_DOUBLE_EQ(b.devices[1].weights, 4.75 * kGiB / 2);
  EXPECT_DOUBLE_EQ(b.devices[2].kv, 2 * kMiB);
  EXPECT_DOUBLE_EQ(b.devices[1].compute, 0);
  EXPECT_DOUBLE_EQ(b.devices[1].capacity, 0.9 * 16 * kGiB);
  EXPECT_DOUBLE_EQ(b.devices[0].total(), 0);

  // Pipeline parallel: two layers per stage, embeddings on the first, the output on the last.
  in.layout = Layout::kLayerSplit;
  b = device_breakdown(in);
  EXPECT_EQ(b.devices[1].layers, 2u);
  EXPECT_DOUBLE_EQ(b.devices[1].weights, 2.25 * kGiB);
  EXPECT_DOUBLE_EQ(b.devices[2].weights, 2.5 * kGiB);
}

}  // namespace
}  // namespace switchyard::plan
