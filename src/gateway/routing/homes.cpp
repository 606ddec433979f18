#include "gateway/routing/homes.h"

#include <algorithm>

namespace switchyard::gateway {

std::optional<std::size_t> Homes::find(std::string_view session) const {
  const auto it = homes_.find(session);
  if (it == homes_.end()) return std::nullopt;
  return it->second.instance;
}

void Homes::set(std::string_view session, std::size_t instance) {
  const auto now = now_();
  if (auto it = homes_.find(session); it != homes_.end()) {
    it->second.instance = instance;
    it->second.active = now;
    recency_.splice(recency_.begin(), recency_, it->second.recency);
    return;
  }
  recency_.emplace_front(session);
  homes_.emplace(recency_.front(), Home{instance, now, recency_.begin()});
  if (homes_.size() > kMaxSessions) {
    homes_.erase(recency_.back());
    recency_.pop_back();
  }
}

std::size_t Homes::place(std::span<const Candidate> candidates, const LoadBound& bound,
                         const Throughput& speed, Rotation& rotation) {
  // Most recently active first: the walk stops at the first idle session.
  const auto since = now_() - kActiveFor;
  counts_.assign(counts_.size(), 0);
  for (const auto& session : recency_) {
    const Home& h = homes_.find(session)->second;
    if (h.active < since) break;
    if (counts_.size() <= h.instance) counts_.resize(h.instance + 1, 0);
    ++counts_[h.instance];
  }
  const auto homes_of = [&](const Candidate& c) {
    return c.index < counts_.size() ? counts_[c.index] : 0;
  };
  int fewest = -1;
  for (const auto& c : candidates)
    if (bound.admits(c) && (fewest < 0 || homes_of(c) < fewest)) fewest = homes_of(c);
  if (fewest < 0) return soonest_free(candidates, speed, rotation);
  return soonest_free(candidates, speed, rotation,
                      [&](const Candidate& c) { return bound.admits(c) && homes_of(c) == fewest; });
}

}  // namespace switchyard::gateway
