#include "gateway/routing/balance.h"

#include <algorithm>
#include <cmath>

#include "gateway/routing/block_hash.h"

namespace switchyard::gateway {

LoadBound::LoadBound(std::span<const Candidate> candidates, double factor) {
  long in_flight = 0, slots = 0;
  for (const auto& c : candidates) {
    in_flight += c.in_flight;
    slots += std::max(c.slots, 1);
  }
  *this = LoadBound(in_flight, slots, factor);
}

LoadBound::LoadBound(long in_flight, long slots, double factor) {
  if (slots > 0)
    per_slot_ = factor * static_cast<double>(in_flight + 1) / static_cast<double>(slots);
}

PrefillCost::PrefillCost(std::span<const Candidate> candidates, double balance_factor, long tokens,
                         std::span<const std::size_t> matched_blocks)
    : candidates_(candidates),
      tokens_(tokens),
      rows_(std::make_unique_for_overwrite<Row[]>(candidates.size())) {
  constexpr long kNone = std::numeric_limits<long>::max();
  long soonest = kNone, free_start = kNone, in_flight = 0, slots = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    Row& r = rows_[i];
    const long held =
        i < matched_blocks.size() ? static_cast<long>(matched_blocks[i]) * kBlockTokens : 0;
    r.uncached = std::max(0L, tokens - held);
    r.cost = c.prefilling + r.uncached;
    soonest = std::min(soonest, r.cost);
    if (c.free && r.cost < free_start) {
      free_start = r.cost;
      soonest_start_ = i;
    }
    in_flight += c.in_flight;
    slots += std::max(c.slots, 1);
  }
  // The bound needs the requests the first pass summed; the second works out
  // what is asked of every candidate several times a pick.
  const LoadBound bound(in_flight, slots, balance_factor);
  long soonest_free = kNone;
  std::size_t admitted_start = kNoCandidate;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    Row& r = rows_[i];
    r.admitted = bound.admits(candidates[i]);
    if (r.admitted && r.cost < soonest_free) {
      soonest_free = r.cost;
      admitted_start = i;
    }
    r.usable = r.admitted && r.cost <= soonest + tokens_ && !holds_up(candidates[i], r.uncached);
  }
  // The soonest start: free under the bound first (soonest_free), then free.
  if (admitted_start != kNoCandidate) soonest_start_ = admitted_start;
  soonest_ = soonest == kNone ? -1 : soonest;
  soonest_free_ = soonest_free == kNone ? -1 : soonest_free;
}

long PrefillCost::free_delay() const {
  return soonest_free_ < 0 ? 0 : soonest_free_ - soonest_;
}

void Throughput::observe(std::size_t index, const RouteFeedback& feedback) {
  // Recent requests weigh most: a card throttling now matters now.
  constexpr double kWeight = 0.3;
  const auto ewma = [](double& r, double sample) {
    r = r > 0 ? r + kWeight * (sample - r) : sample;
  };
  // A prompt this short is mostly the time to the first event's overheads.
  constexpr long kMinPrefill = 256;
  const long evaluated = feedback.prompt_tokens - feedback.cached_tokens;
  const double to_first = feedback.seconds - feedback.decode_seconds;
  if (feedback.decode_seconds >= 0 && evaluated >= kMinPrefill && to_first > 0) {
    if (prefill_.size() <= index) prefill_.resize(index + 1, 0);
    ewma(prefill_[index], static_cast<double>(evaluated) / to_first);
  }
  const bool streamed = feedback.decode_seconds > 0 && feedback.completion_tokens > 1;
  const long tokens = streamed ? feedback.completion_tokens - 1 : feedback.completion_tokens;
  const double seconds = streamed ? feedback.decode_seconds : feedback.seconds;
  if (tokens <= 0 || !(seconds > 0)) return;
  if (rate_.size() <= index) rate_.resize(index + 1, 0);
  ewma(rate_[index], static_cast<double>(tokens) / seconds);
}

double Throughput::mean_rate(std::span<const Candidate> candidates) const {
  double known = 0;
  int measured = 0;
  for (const auto& c : candidates)
    if (const double r = rate(c.index); r > 0) {
      known += r;
      ++measured;
    }
  return measured > 0 ? known / measured : 1.0;
}

double Throughput::prefill_rate() const {
  double sum = 0;
  int measured = 0;
  for (const double r : prefill_)
    if (r > 0) {
      sum += r;
      ++measured;
    }
  return measured > 0 ? sum / measured : 0;
}

}  // namespace switchyard::gateway
