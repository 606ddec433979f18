#include "obs/generation_meter.h"

#include <algorithm>

namespace switchyard::obs {

std::int64_t GenerationMeter::second_of(clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

// Moves the ring forward to `second`, zeroing the seconds skipped.
void GenerationMeter::advance(Series& s, std::int64_t second) {
  if (second <= s.last_second) return;
  const std::int64_t size = kHistorySeconds;
  const std::int64_t from = std::max(s.last_second + 1, second - size + 1);
  for (std::int64_t t = from; t <= second; ++t) s.buckets[t % size] = 0;
  s.last_second = second;
}

GenerationMeter::Series& GenerationMeter::series(const std::string& instance) {
  auto it = series_.find(instance);
  if (it == series_.end()) it = series_.emplace(instance, Series{}).first;
  return it->second;
}

void GenerationMeter::add(const std::string& instance, std::int64_t tokens, clock::time_point now) {
  if (tokens > 0) add(series(instance), tokens, now);  // no series for nothing counted
}

void GenerationMeter::add(Series& s, std::int64_t tokens, clock::time_point now) {
  if (tokens <= 0) return;
  const std::int64_t second = second_of(now);
  if (s.last_second < 0) s.last_second = second;
  advance(s, second);
  // A time before the ring's newest second lands in its own bucket while it
  // is still kept.
  if (second > s.last_second - kHistorySeconds) s.buckets[second % kHistorySeconds] += tokens;
}

double GenerationMeter::rate_of(const Series& s, std::int64_t now_second, std::int64_t window) {
  std::int64_t sum = 0;
  for (std::int64_t t = now_second - window; t < now_second; ++t) {
    if (t < 0 || t > s.last_second || t <= s.last_second - kHistorySeconds) continue;
    sum += s.buckets[t % kHistorySeconds];
  }
  return static_cast<double>(sum) / static_cast<double>(window);
}

double GenerationMeter::rate(const std::string& instance, std::chrono::seconds window,
                             clock::time_point now) const {
  const auto it = series_.find(instance);
  const std::int64_t w = std::clamp<std::int64_t>(window.count(), 1, kHistorySeconds - 1);
  return it == series_.end() ? 0 : rate_of(it->second, second_of(now), w);
}

double GenerationMeter::total_rate(std::chrono::seconds window, clock::time_point now) const {
  const std::int64_t w = std::clamp<std::int64_t>(window.count(), 1, kHistorySeconds - 1);
  double sum = 0;
  for (const auto& [name, s] : series_) sum += rate_of(s, second_of(now), w);
  return sum;
}

}  // namespace switchyard::obs
