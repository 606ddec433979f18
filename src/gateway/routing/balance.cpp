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
  if (slots > 0)
    per_slot_ = factor * static_cast<double>(in_flight + 1) / static_cast<double>(slots);
}

PrefillCost::PrefillCost(std::span<const Candidate> candidates, const LoadBound& bound, long tokens,
                         std::span<const std::size_t> matched_blocks)
    : candidates_(candidates), tokens_(tokens), rows_(candidates.size()) {
  // Free under the bound first, then free, each by the least cost.
  const auto before = [](const Row& a, const Row& b) {
    return std::pair{!a.admitted, a.cost} < std::pair{!b.admitted, b.cost};
  };
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    const Candidate& c = candidates[i];
    Row& r = rows_[i];
    const long held =
        i < matched_blocks.size() ? static_cast<long>(matched_blocks[i]) * kBlockTokens : 0;
    r.uncached = std::max(0L, tokens - held);
    r.cost = c.prefilling + r.uncached;
    r.admitted = bound.admits(c);
    if (soonest_ < 0 || r.cost < soonest_) soonest_ = r.cost;
    if (r.admitted && (soonest_free_ < 0 || r.cost < soonest_free_)) soonest_free_ = r.cost;
    if (c.free && (!candidates[soonest_start_].free || before(r, rows_[soonest_start_])))
      soonest_start_ = i;
  }
  // Asked of every candidate several times a pick: worked out once.
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    Row& r = rows_[i];
    r.usable = r.admitted && r.cost <= soonest_ + tokens_ && !holds_up(candidates[i]);
  }
}

std::size_t PrefillCost::position(const Candidate& c) const {
  return static_cast<std::size_t>(&c - candidates_.data());
}

long PrefillCost::uncached(const Candidate& c) const {
  return rows_[position(c)].uncached;
}

bool PrefillCost::holds_up(const Candidate& c) const {
  return c.in_flight > 0 && uncached(c) > kHoldUp * std::max(c.shortest_running, kHoldUpFloor);
}

bool PrefillCost::usable(const Candidate& c) const {
  return rows_[position(c)].usable;
}

long PrefillCost::free_delay() const {
  return soonest_free_ < 0 ? 0 : soonest_free_ - soonest_;
}

bool PrefillCost::no_later_than(const Candidate& c, const Candidate& home) const {
  return rows_[position(c)].cost <= rows_[position(home)].cost + tokens_;
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
