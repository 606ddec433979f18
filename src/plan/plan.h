// `switchyard plan`: will this model fit these GPUs at this context and concurrency, which
// topology, which engine flags. The CLI maps its flags onto PlanOptions; everything else is here.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "plan/gpu_cards.h"

namespace switchyard::plan {

// The request as typed. Values stay text where the user typed text so that errors can quote it and
// name the flag; run_plan validates everything once.
struct PlanOptions {
  // --model: a GGUF file (any shard of a split model) or a Hugging Face config.json (or the
  // directory holding it). Required.
  std::string model;
  // --gpus: "4x32G" = four cards of 32 GiB; "32GB" means 10^9 bytes. Required.
  std::string gpus;
  // --context: tokens per sequence. Default: min(the model's trained context, 32768).
  std::optional<uint64_t> context;
  // --concurrency: sequences the whole box must hold at once (the gateway spreads them over
  // instances). Default 1.
  uint64_t concurrency = 1;
  // --kv-type: f16 (default), q8_0, q4_0 (llama.cpp) or fp8 (vLLM).
  std::string kv_type = "f16";
  // --engine: llamacpp (default) or vllm. Decides the memory model and the fleet config.
  std::string engine = "llamacpp";
  // --tp: tensor-parallel size. Only when asked for: it costs two all-reduces per layer per token.
  std::optional<uint64_t> tensor_parallel;
  // --json: machine-readable output (fields documented in docs/plan.md).
  bool json = false;
  // --gpu-memory-utilization: vLLM's share of each card (0, 1]. Default 0.9. Ignored by llama.cpp.
  std::optional<double> gpu_memory_utilization;
  // --overhead: memory per card taken before any KV (compute buffers, runtime context). Default
  // 1G for llama.cpp, 0 for vLLM (whose utilization fraction already leaves the rest).
  std::string overhead;
  // --ngl: llama.cpp -ngl, layers offloaded to the GPUs (the output layer counts as one, as in
  // llama.cpp). Default: all. The rest stay in RAM with their KV cache.
  std::optional<uint64_t> gpu_layers;
  // --ubatch: llama.cpp -ub, the micro-batch the compute buffers are sized for. Default 512.
  uint64_t n_ubatch = 512;
  // --gpu: the card model (gpu_cards.h). Gives the memory when --gpus is a bare count, and
  // brings doctor's known issues for it into the advice.
  std::string gpu_model;
  // doctor's known issues for that card's target; the CLI fills them (plan does not link doctor).
  std::vector<CardIssue> card_issues;
  // --weights-size: the weights' total size, overriding what the model file says. Needed for a
  // config.json without safetensors beside it.
  std::string weights_size;
};

// Runs the plan and writes the report (text or JSON) to `out`. Returns 0 when the request fits,
// 1 when it does not, 2 for bad input (one line on `err` naming the flag or field).
int run_plan(const PlanOptions& options, std::ostream& out, std::ostream& err);

}  // namespace switchyard::plan
