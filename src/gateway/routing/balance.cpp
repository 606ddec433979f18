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

PrefillCost::Sums PrefillCost::sum(std::span<const Candidate> candidates, long tokens,
                                   std::span<const std::size_t> matched_blocks) {
  constexpr long kNone = std::numeric_limits<long>::max();
  Sums s{kNone, kNone, 0, 0, 0};
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    const long cost = c.prefilling + uncached(tokens, matched_blocks, i);
    s.soonest = std::min(s.soonest, cost);
    if (c.free && cost < s.free_start) {
      s.free_start = cost;
      s.free_start_at = i;
    }
    s.in_flight += c.in_flight;
    s.slots += std::max(c.slots, 1);
  }
  return s;
}

PrefillCost::PrefillCost(std::span<const Candidate> candidates, double balance_factor, long tokens,
                         std::span<const std::size_t> matched_blocks)
    : PrefillCost(candidates, balance_factor, tokens, matched_blocks,
                  sum(candidates, tokens, matched_blocks)) {}

PrefillCost::PrefillCost(std::span<const Candidate> candidates, double balance_factor, long tokens,
                         std::span<const std::size_t> matched_blocks, const Sums& sums)
    : candidates_(candidates),
      matched_(matched_blocks),
      tokens_(tokens),
      bound_(sums.in_flight, sums.slots, balance_factor),
      soonest_(candidates.empty() ? -1 : sums.soonest),
      free_start_at_(sums.free_start_at) {}

const PrefillCost::SoonestFree& PrefillCost::soonest_free() const {
  if (!soonest_free_) {
    SoonestFree best{-1, kNoCandidate};
    for (const Candidate& c : candidates_)
      if (bound_.admits(c))
        if (const long cost_c = cost(c); best.cost < 0 || cost_c < best.cost)
          best = {cost_c, static_cast<std::size_t>(&c - candidates_.data())};
    soonest_free_ = best;
  }
  return *soonest_free_;
}

bool PrefillCost::surely_usable(std::span<const Candidate> candidates, const Candidate& c,
                                double balance_factor, long tokens, std::size_t matched_blocks) {
  const long least_prefilling =
      std::ranges::min_element(candidates, {}, &Candidate::prefilling)->prefilling;  // c is one
  const long u = uncached(tokens, matched_blocks);
  return LoadBound(candidates, balance_factor).admits(c) &&
         c.prefilling + u <= least_prefilling + tokens && !holds_up(c, u);
}

long PrefillCost::free_delay() const {
  const long free = soonest_free().cost;
  return free < 0 ? 0 : free - soonest_;
}

std::size_t PrefillCost::soonest_start() const {
  // Free under the bound first, then free.
  const std::size_t admitted = soonest_free().at;
  return admitted != kNoCandidate ? admitted : free_start_at_;
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
