#include "gateway/routing/homes.h"

#include <algorithm>

#include "gateway/routing/block_hash.h"

namespace switchyard::gateway {

std::optional<std::size_t> Homes::find(std::string_view session) const {
  const auto it = homes_.find(session);
  if (it == homes_.end()) return std::nullopt;
  return it->second.instance;
}

long Homes::weight(std::string_view session) const {
  const auto it = homes_.find(session);
  return it == homes_.end() ? 0 : it->second.weight;
}

void Homes::set(std::string_view session, std::size_t instance, std::size_t prompt_bytes) {
  unreserve(session);
  const auto now = now_();
  // A session without a prompt (tests, probes) still weighs one.
  const long weight = std::max(1L, estimated_tokens(prompt_bytes));
  if (auto it = homes_.find(session); it != homes_.end()) {
    it->second.instance = instance;
    it->second.weight = weight;
    it->second.active = now;
    recency_.splice(recency_.begin(), recency_, it->second.recency);
    return;
  }
  recency_.emplace_front(session);
  homes_.emplace(recency_.front(), Home{instance, weight, now, recency_.begin()});
  if (homes_.size() > kMaxSessions) {
    homes_.erase(recency_.back());
    recency_.pop_back();
  }
}

void Homes::reserve(std::string_view session, std::size_t instance, long weight,
                    Clock::time_point until) {
  if (reserved_for_other(instance, session)) return;
  weight = std::max(1L, weight);
  // A waiter is picked again at every freed slot: its own reservation moves
  // on in place.
  if (reserved_by(instance, session)) {
    reserved_[instance].weight = weight;
    reserved_[instance].until = until;
    return;
  }
  unreserve(session);
  if (reserved_.size() <= instance) reserved_.resize(instance + 1);
  if (reserved_[instance].session.empty()) ++held_;  // else an expired one, replaced
  reserved_[instance] = Reservation{std::string(session), weight, until};
}

void Homes::unreserve(std::string_view session) {
  if (held_ == 0 || session.empty()) return;
  for (auto& r : reserved_)
    if (r.session == session) {
      r = Reservation{};
      --held_;
    }
}

const Homes::Reservation* Homes::reservation(std::size_t instance) const {
  if (instance >= reserved_.size()) return nullptr;
  const Reservation& r = reserved_[instance];
  return !r.session.empty() && now_() < r.until ? &r : nullptr;
}

bool Homes::kept_for_other(std::size_t instance, std::string_view session) const {
  const Reservation* r = reservation(instance);
  return r && r->session != session;
}

bool Homes::reserved_by(std::size_t instance, std::string_view session) const {
  const Reservation* r = reservation(instance);
  return r && r->session == session;
}

void Homes::weigh() {
  // Most recently active first: the walk stops at the first idle session.
  const auto since = now_() - kActiveFor;
  weights_.assign(weights_.size(), 0);
  for (const auto& session : recency_) {
    const Home& h = homes_.find(session)->second;
    if (h.active < since) break;
    if (weights_.size() <= h.instance) weights_.resize(h.instance + 1, 0);
    weights_[h.instance] += h.weight;
  }
  for (std::size_t i = 0; i < reserved_.size(); ++i)
    if (const Reservation* r = reservation(i)) {
      if (weights_.size() <= i) weights_.resize(i + 1, 0);
      weights_[i] += r->weight;
    }
}

bool Homes::outweighs_mean(std::span<const Candidate> candidates, std::string_view session,
                           long weight) {
  if (candidates.empty()) return false;
  weigh();
  long total = 0;
  bool counted = false;
  const auto home = find(session);
  for (const auto& c : candidates) {
    if (c.index < weights_.size()) total += weights_[c.index];
    counted |= (home && *home == c.index) || reserved_by(c.index, session);
  }
  if (!counted) total += weight;
  return static_cast<double>(weight) >
         static_cast<double>(total) / static_cast<double>(candidates.size());
}

std::size_t Homes::lightest(std::span<const Candidate> candidates, std::string_view session) {
  for (std::size_t i = 0; i < candidates.size(); ++i)
    if (reserved_by(candidates[i].index, session)) return i;
  weigh();
  const auto weight_of = [&](const Candidate& c) {
    return c.index < weights_.size() ? weights_[c.index] : 0L;
  };
  std::size_t best = 0;
  for (std::size_t i = 1; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    const Candidate& b = candidates[best];
    const double per_slot = (c.in_flight + 1.0) / std::max(c.slots, 1);
    const double best_per_slot = (b.in_flight + 1.0) / std::max(b.slots, 1);
    if (weight_of(c) < weight_of(b) || (weight_of(c) == weight_of(b) && per_slot < best_per_slot))
      best = i;
  }
  return best;
}

}  // namespace switchyard::gateway
