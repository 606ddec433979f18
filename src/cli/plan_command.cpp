// `switchyard plan`: maps flags onto plan::PlanOptions; plan::run_plan does the work.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "cli/command.h"
#include "plan/plan.h"

namespace switchyard::cli {

Command add_plan_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "plan",
      "Will a model fit these GPUs at this context and concurrency; which topology; which engine "
      "flags. Exit 0 fits, 1 does not fit, 2 bad input.");
  // Owned by the run closure: the parsed values must outlive this function.
  auto options = std::make_shared<plan::PlanOptions>();

  sub->add_option("--model", options->model,
                  "A GGUF file (any shard of a split model) or a Hugging Face config.json (or its "
                  "directory)")
      ->required();
  sub->add_option("--gpus", options->gpus,
                  "Cards and memory each: 4x32G (G = GiB; GB = 10^9 bytes)")
      ->required();
  sub->add_option("--context", options->context,
                  "Tokens per sequence (default: min(trained context, 32768))");
  sub->add_option("--concurrency", options->concurrency,
                  "Sequences the whole box holds at once (default 1)");
  sub->add_option("--kv-type", options->kv_type,
                  "KV cache type: f16 (default), q8_0, q4_0 (llama.cpp) or fp8 (vLLM)");
  sub->add_option("--engine", options->engine, "llamacpp (default) or vllm");
  sub->add_option("--tp", options->tensor_parallel,
                  "Tensor-parallel size; only when you want it (two all-reduces per layer per "
                  "token)");
  sub->add_flag("--json", options->json, "Machine-readable output (see docs/plan.md)");
  sub->add_option("--gpu-memory-utilization", options->gpu_memory_utilization,
                  "vLLM's share of each card (default 0.9)");
  sub->add_option("--overhead", options->overhead,
                  "Per-card memory before any KV cache (default 1G for llama.cpp, 0 for vLLM)");
  sub->add_option("--weights-size", options->weights_size,
                  "The weights' total size, e.g. 54GB (overrides the model file; needed for a "
                  "config.json without safetensors)");

  return Command{sub, [options] { return plan::run_plan(*options, std::cout, std::cerr); }};
}

}  // namespace switchyard::cli
