// summarize_step: from a step's records to its report line.
#include <algorithm>
#include <cstdlib>

#include "bench/run_report.h"

namespace switchyard::bench {

namespace {

// The most requests in flight at once, from their start and end times.
int peak_in_flight(const std::vector<const RequestRecord*>& records) {
  std::vector<std::pair<double, int>> edges;
  for (const auto* r : records) {
    edges.emplace_back(r->start_s, +1);
    edges.emplace_back(r->start_s + r->e2e_ms / 1000.0, -1);
  }
  std::sort(edges.begin(), edges.end());  // an end sorts before a start at the same time
  int now = 0;
  int peak = 0;
  for (const auto& [at, delta] : edges) peak = std::max(peak, now += delta);
  return peak;
}

// Sends per second between the first and the last send; nullopt for fewer
// than two.
std::optional<double> arrival_rate(const std::vector<const RequestRecord*>& records) {
  if (records.size() < 2) return std::nullopt;
  const auto [first, last] =
      std::minmax_element(records.begin(), records.end(),
                          [](const auto* a, const auto* b) { return a->start_s < b->start_s; });
  const double span = (*last)->start_s - (*first)->start_s;
  if (span <= 0) return std::nullopt;
  return static_cast<double>(records.size() - 1) / span;
}

}  // namespace

StepReport summarize_step(const StepPlan& plan, const StepOutcome& outcome) {
  StepReport s;
  s.rate = plan.rate;
  s.interrupted = outcome.interrupted;
  s.warmup = plan.warmup;
  s.wall_s = outcome.wall_s;
  std::vector<const RequestRecord*> measured;
  for (const auto& r : outcome.records)
    if (!r.warmup && r.error != "interrupted") measured.push_back(&r);
  s.concurrency = plan.rate > 0 ? peak_in_flight(measured) : plan.concurrency;
  if (plan.rate > 0) s.achieved_rate = arrival_rate(measured);

  std::vector<double> ttft, itl, tpot, e2e, prompt, reported, decode_rate;
  double claimed_tokens = 0;  // Σ self-reported speed × own decode time
  for (const auto* r : measured) {
    ++s.requests;
    if (!r->ok()) {
      ++s.errors[r->error];
      s.error_examples.try_emplace(r->error, r->error_detail);
      continue;
    }
    ++s.succeeded;
    if (r->short_output) ++s.short_outputs;
    s.output_tokens += r->output_tokens();
    if (r->ttft_ms >= 0) ttft.push_back(r->ttft_ms);
    itl.insert(itl.end(), r->itl_ms.begin(), r->itl_ms.end());
    e2e.push_back(r->e2e_ms);
    if (r->prompt_tokens >= 0) prompt.push_back(static_cast<double>(r->prompt_tokens));
    if (r->prompt_tokens >= 0 && r->prompt_target >= 0) ++s.prompt_checked;
    if (r->cached_tokens >= 0) s.cached_tokens = std::max(0L, s.cached_tokens) + r->cached_tokens;
    if (r->prompt_tokens >= 0 && r->prompt_target >= 0 && r->prompt_tokens != r->prompt_target) {
      ++s.prompt_off_target;
      const auto miss = [](long got, long want) { return std::abs(got - want); };
      if (s.worst_prompt_tokens < 0 || miss(r->prompt_tokens, r->prompt_target) >
                                           miss(s.worst_prompt_tokens, s.worst_prompt_target)) {
        s.worst_prompt_tokens = r->prompt_tokens;
        s.worst_prompt_target = r->prompt_target;
      }
    }
    if (const double t = r->tpot_ms(); t > 0) {
      tpot.push_back(t);
      if (r->self_reported_tps > 0) {
        reported.push_back(r->self_reported_tps);
        claimed_tokens += r->self_reported_tps * (r->last_token_ms - r->ttft_ms) / 1000.0;
        decode_rate.push_back(1000.0 / t);
      }
    }
  }
  if (s.wall_s > 0) {
    s.output_tokens_per_s = static_cast<double>(s.output_tokens) / s.wall_s;
    s.requests_per_s = static_cast<double>(s.succeeded) / s.wall_s;
  }
  s.ttft_ms = summarize(std::move(ttft));
  s.itl_ms = summarize(std::move(itl));
  s.tpot_ms = summarize(std::move(tpot));
  s.e2e_ms = summarize(std::move(e2e));
  s.prompt_tokens = summarize(std::move(prompt));
  if (!reported.empty()) {
    const double claimed = summarize(reported).mean;
    const double measured_rate = summarize(decode_rate).mean;
    if (s.wall_s > 0) s.self_reported_tokens_per_s = claimed_tokens / s.wall_s;
    if (measured_rate > 0) {
      s.self_report_ratio = claimed / measured_rate;
      s.inflated = *s.self_report_ratio > kInflatedRatio;
    }
  }
  return s;
}

}  // namespace switchyard::bench
