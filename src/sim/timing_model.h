// How long the simulated engine takes: a decode step as a function of the
// tokens in the batch, and prefill as a function of context depth. Pure
// arithmetic over named parameters; docs/sim.md explains each and how the
// presets were calibrated.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace switchyard::sim {

// One measured point of the decode curve: a step that decodes `batch_tokens`
// tokens (one per running sequence, or 1 + draft length per sequence with
// speculative decoding) takes `seconds`.
struct DecodePoint {
  int batch_tokens = 1;
  double seconds = 0;
};

// One point, 1/65 s: 65 tok/s per sequence whatever the batch.
inline std::vector<DecodePoint> default_decode_curve() {
  std::vector<DecodePoint> curve(1);
  curve[0].seconds = 1.0 / 65.0;
  return curve;
}

struct TimingOptions {
  // The decode curve, sorted by batch_tokens, at least one point. Between
  // points the step time is interpolated linearly; beyond the last it is
  // extrapolated with the last segment's slope (a single point is flat: every
  // slot decodes at the same rate whatever the batch, the old sim's model).
  // Default: one point, 1/65 s (65 tok/s per sequence).
  std::vector<DecodePoint> decode_curve = default_decode_curve();
  // Prompt processing rate at depth 0, tokens per second. Infinity makes
  // prefill instant (the `fast` preset). Default 900.
  double prefill_tokens_per_second = 900;
  // Context depth at which prefill runs at half its depth-0 rate: the time of
  // one prompt token at depth d is (1 + d / half_depth) / rate, the linear
  // growth of attention work with context. 0 disables the slowdown.
  // Default 0.
  double prefill_half_depth = 0;
  // Speculative decoding: draft tokens proposed per sequence and step (0: off).
  // A step then verifies 1 + draft tokens per sequence (so its batch is that
  // many times larger: cheap for one stream, costly for a batch).
  int spec_draft_tokens = 0;
  // Probability that each draft token is accepted, given the previous one was
  // (0..1). Accepted drafts are extra output tokens of the same step.
  double spec_acceptance = 0;
};

// Checks the options once; the error names the field.
std::optional<Error> validate(const TimingOptions& options);

// Parses "B:MS,B:MS,...", e.g. "1:31.5,4:31.7,8:48.7" (batch tokens and
// milliseconds per step) into a decode curve.
Result<std::vector<DecodePoint>> parse_decode_curve(std::string_view text);
std::string format_decode_curve(const std::vector<DecodePoint>& curve);

class TimingModel {
 public:
  explicit TimingModel(TimingOptions options = {});

  const TimingOptions& options() const { return options_; }

  // Seconds of one decode step over `batch_tokens` tokens (0 for an empty
  // batch).
  double decode_seconds(int batch_tokens) const;

  // Seconds to process `tokens` prompt tokens whose first sits at context
  // depth `depth` (tokens already in the sequence's KV cache).
  double prefill_seconds(int tokens, int depth) const;

  // Expected output tokens per sequence and step: 1 without speculation,
  // (1 - p^(k+1)) / (1 - p) with draft length k and acceptance p.
  double expected_tokens_per_step() const;

 private:
  TimingOptions options_;
};

}  // namespace switchyard::sim
