#include "sim/presets.h"

#include <fmt/format.h>

#include <limits>

namespace switchyard::sim {

namespace {

// Prefill of a 27B dense model on one card: ~900 tok/s on a short prompt;
// a 186K-token cold prefill took 620 s (300 tok/s on average). With the
// per-token time (1 + d/h)/r0, a cold prefill of D tokens takes
// (D + D^2/2h)/r0 s; 620 s for D = 186000 at r0 = 900 gives h = 46500.
constexpr double kCardPrefillHalfDepth = 46500;

// One llama-server slot on one card. `step_ms` is the decode step that,
// with the 2K-token prefill before it, delivers the table's tok/s for a
// 2K-prompt, 256-token request (docs/sim.md, "Calibration").
Preset single_card(std::string name, std::string summary, double step_ms, double prefill_rate) {
  Preset p;
  p.name = std::move(name);
  p.dialect = "llamacpp";
  p.summary = std::move(summary);
  auto& s = p.engine.scheduler;
  s.mode = SchedulerMode::slots;
  s.max_seqs = 1;
  s.slot_context = 196608;
  s.max_batched_tokens = 2048;
  s.timing.decode_curve = {{1, step_ms / 1e3}};
  s.timing.prefill_tokens_per_second = prefill_rate;
  s.timing.prefill_half_depth = kCardPrefillHalfDepth;
  return p;
}

std::vector<Preset> make_presets() {
  std::vector<Preset> all;
  all.push_back(single_card("7900xtx-27b-q4", "27B Q4 on one Radeon 7900 XTX, llama-server -np 1",
                            7.781, 900));
  all.push_back(single_card("7900xtx-blower-27b-q4",
                            "27B Q4 on the second (blower, chipset-attached) 7900 XTX", 10.654,
                            900 * 0.82));
  all.push_back(single_card("r9700-27b-q4", "27B Q4 on one Radeon AI PRO R9700, llama-server -np 1",
                            6.3245, 900));

  Preset tp2;
  tp2.name = "2x7900xtx-tp2-vllm";
  tp2.dialect = "vllm";
  tp2.summary =
      "27B on two 7900 XTX, vLLM tensor parallel 2 (aggregate 97 / 118 tok/s at 4 / 8 streams)";
  auto& s = tp2.engine.scheduler;
  s.mode = SchedulerMode::paged;
  s.max_seqs = 8;
  s.slot_context = 163840;  // --max-model-len
  s.kv_capacity_tokens = 327680;
  s.block_size = 16;
  s.max_batched_tokens = 8192;
  // Latency-bound up to 4 sequences (the PCIe all-reduce dominates), then
  // compute grows; the 16-token point is what MTP3 verification at N=4 costs.
  s.timing.decode_curve = {{1, 0.0315}, {4, 0.0317}, {8, 0.0487}, {16, 0.1174}};
  // 130K tokens cold in 77 s (1684 tok/s): with h = 65000,
  // (130000 + 130000^2 / 130000) / r0 = 77 s gives r0 = 3377.
  s.timing.prefill_tokens_per_second = 3377;
  s.timing.prefill_half_depth = 65000;
  all.push_back(tp2);

  Preset fast;
  fast.name = "fast";
  fast.dialect = "llamacpp";
  fast.summary = "an engine without delays, for measuring a gateway's own overhead";
  fast.engine.scheduler.max_seqs = 8;
  fast.engine.scheduler.slot_context = 65536;
  fast.engine.scheduler.timing.decode_curve = {{1, 0.0}};
  fast.engine.scheduler.timing.prefill_tokens_per_second = std::numeric_limits<double>::infinity();
  all.push_back(fast);

  // A hybrid (Mamba + attention) model: its recurrent state cannot be
  // rewound to a shared prefix, so llama-server re-evaluates every prompt
  // (cache_n 0) however the gateway routes (BRIEF point 6; vLLM #40696 for
  // the same on vLLM). Same card and speed as r9700-27b-q4.
  all.push_back(single_card(
      "r9700-hybrid-q4", "a hybrid Mamba+attention model on one R9700: its prefix cache never hits",
      6.3245, 900));
  all.back().engine.scheduler.prefix_caching = false;
  return all;
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = make_presets();
  return all;
}

const Preset* find_preset(std::string_view name) {
  for (const auto& p : presets())
    if (p.name == name) return &p;
  return nullptr;
}

std::string describe_speed(const TimingOptions& timing) {
  constexpr int kPrompt = 2048;
  constexpr int kOutput = 256;
  const TimingModel t(timing);
  const double step = t.decode_seconds(1 + timing.spec_draft_tokens);
  const double prefill = t.prefill_seconds(kPrompt, 0);
  if (step <= 0)
    return prefill <= 0 ? "no delays (decode and prefill take no time)"
                        : fmt::format("no decode delay, prefill at {:.4g} tok/s",
                                      timing.prefill_tokens_per_second);
  const double decode = t.expected_tokens_per_step() / step;
  // The step that finishes the prompt yields the first token.
  const double delivered = kOutput / (prefill + (kOutput - 1) / decode);
  return fmt::format(
      "{:.4g} tok/s pure decode per sequence, {:.4g} tok/s delivered end to end ({}-token "
      "prompt + {} tokens, idle engine)",
      decode, delivered, kPrompt, kOutput);
}

std::string preset_line(const Preset& p) {
  const int slots = p.engine.scheduler.max_seqs;
  return fmt::format("{:<22} {} dialect, {} slot{}: {}; {}", p.name, p.dialect, slots,
                     slots == 1 ? "" : "s", p.summary, describe_speed(p.engine.scheduler.timing));
}

}  // namespace switchyard::sim
