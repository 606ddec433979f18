// `switchyard plan`: maps flags onto plan::PlanOptions; plan::run_plan does the work.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "cli/command.h"
#include "doctor/gpu_models.h"
#include "plan/gpu_cards.h"
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
  sub->add_option("--gpu", options->gpu_model,
                  "The card model (r9700, 7900xtx, 7900xt, 3090, 4090, 5090): its memory for a "
                  "bare --gpus count, and doctor's known issues for it in the advice");
  sub->add_option("--ngl", options->gpu_layers,
                  "llama.cpp -ngl: layers on the GPUs, the output layer counting as one (default "
                  "all); the rest and their KV stay in RAM");
  sub->add_option("--ubatch", options->n_ubatch,
                  "llama.cpp -ub: the micro-batch the compute buffers are sized for (default 512)");
  sub->add_option("--weights-size", options->weights_size,
                  "The weights' total size, e.g. 54GB (overrides the model file; needed for a "
                  "config.json without safetensors)");

  return Command{sub, [options] {
                   // doctor keeps the known issues per ROCm target; plan applies them.
                   if (const auto* card = plan::find_gpu_card(options->gpu_model)) {
                     for (const auto* issue : doctor::known_issues_for(card->gfx)) {
                       options->card_issues.push_back(plan::CardIssue{
                           std::string(issue->id), static_cast<uint32_t>(issue->min_gpus),
                           std::string(issue->summary), std::string(issue->advice),
                           std::string(issue->sources)});
                     }
                   }
                   return plan::run_plan(*options, std::cout, std::cerr);
                 }};
}

}  // namespace switchyard::cli
