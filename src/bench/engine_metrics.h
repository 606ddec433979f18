// The self-report check for engines that report their speed only in
// aggregate: vLLM's /metrics (no per-request timings like llama.cpp's).
// Scraped before and after a step, outside the timed streams.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bench/endpoint_probe.h"
#include "bench/request_record.h"
#include "bench/run_report.h"

namespace switchyard::bench {

// vLLM's counters at one scrape; a field is empty when the engine does not
// expose it.
struct EngineCounters {
  std::optional<double> generation_tokens;  // vllm:generation_tokens_total
  // vllm:inter_token_latency_seconds (vLLM ≥ 0.9) or the older
  // vllm:time_per_output_token_seconds: _sum and _count.
  std::optional<double> itl_sum_s, itl_count;
};

// The figures of a Prometheus text exposition; nullopt when it has no vllm:
// sample (not a vLLM engine).
std::optional<EngineCounters> parse_vllm_metrics(std::string_view text);

// GET {base}/metrics, parsed; nullopt when unreachable or not vLLM.
std::optional<EngineCounters> scrape_vllm_metrics(const std::string& base_url,
                                                  const HeaderList& headers);

// Fills the step's self-report from what the engine counted over it, when
// its requests carried no timings of their own: the claimed decode speed (1 /
// mean inter-token latency) over the measured one (mean of 1 / TPOT), and
// the generated tokens the engine counted (warm-up ones taken off) per wall
// second.
void apply_engine_counters(StepReport& step, const std::vector<RequestRecord>& records,
                           const EngineCounters& before, const EngineCounters& after);

}  // namespace switchyard::bench
