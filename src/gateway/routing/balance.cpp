#include "gateway/routing/balance.h"

#include <algorithm>
#include <cmath>

namespace switchyard::gateway {

LoadBound::LoadBound(std::span<const Candidate> candidates, double factor) : factor_(factor) {
  for (const auto& c : candidates) {
    in_flight_ += c.in_flight;
    slots_ += std::max(c.slots, 1);
  }
}

bool LoadBound::admits(const Candidate& c) const {
  if (!c.free || slots_ == 0) return false;
  const double share = static_cast<double>(std::max(c.slots, 1)) / static_cast<double>(slots_);
  const double bound = std::ceil(factor_ * static_cast<double>(in_flight_ + 1) * share - 1e-9);
  return c.in_flight + 1 <= bound + kSlack;
}

void Throughput::observe(std::size_t index, const RouteFeedback& feedback) {
  const bool streamed = feedback.decode_seconds > 0 && feedback.completion_tokens > 1;
  const long tokens = streamed ? feedback.completion_tokens - 1 : feedback.completion_tokens;
  const double seconds = streamed ? feedback.decode_seconds : feedback.seconds;
  if (tokens <= 0 || !(seconds > 0)) return;
  // Recent requests weigh most: a card throttling now matters now.
  constexpr double kWeight = 0.3;
  if (rate_.size() <= index) rate_.resize(index + 1, 0);
  const double sample = static_cast<double>(tokens) / seconds;
  double& r = rate_[index];
  r = r > 0 ? r + kWeight * (sample - r) : sample;
}

double Throughput::rate(std::size_t index) const {
  return index < rate_.size() ? rate_[index] : 0;
}

}  // namespace switchyard::gateway
