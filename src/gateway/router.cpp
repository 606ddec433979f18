#include "gateway/router.h"

#include <cassert>
#include <stdexcept>

namespace switchyard::gateway {

RouteLease& RouteLease::operator=(RouteLease&& o) noexcept {
  if (this != &o) {
    release();
    router_ = std::move(o.router_);
    instance_ = o.instance_;
  }
  return *this;
}

RouteLease::~RouteLease() {
  release();
}

void RouteLease::release() {
  if (router_ && *router_) (*router_)->release(instance_);
  router_.reset();
}

void Router::add_instance(std::size_t index, std::string model, int slots) {
  if (index != entries_.size()) throw std::logic_error("Router: instances must be added in order");
  entries_.push_back(Entry{std::move(model), slots, false, 0});
}

void Router::set_ready(std::size_t index, bool ready) {
  entries_.at(index).ready = ready;
}
void Router::set_slots(std::size_t index, int slots) {
  entries_.at(index).slots = slots;
}

std::optional<RouteLease> Router::acquire(const std::string& model, Refusal* why,
                                          std::optional<std::size_t> avoid) {
  const std::size_t n = entries_.size();
  std::optional<std::size_t> best;
  bool any_ready = false;
  for (std::size_t k = 0; k < n; ++k) {
    // Round-robin starts after the last pick; least-outstanding scans in
    // the same rotating order so ties spread evenly.
    const std::size_t i = (next_ + k) % n;
    const auto& e = entries_[i];
    if (e.model != model || !e.ready || i == avoid) continue;
    any_ready = true;
    if (e.in_flight >= e.slots) continue;
    if (policy_ == fleet::RoutingPolicy::round_robin) {
      best = i;
      break;
    }
    // Least outstanding, relative to capacity: free fraction of slots.
    if (!best || e.in_flight * entries_[*best].slots < entries_[*best].in_flight * e.slots)
      best = i;
  }
  if (!best) {
    if (why) *why = any_ready ? Refusal::all_slots_busy : Refusal::no_instance_ready;
    return std::nullopt;
  }
  next_ = (*best + 1) % n;
  ++entries_[*best].in_flight;
  return RouteLease(self_, *best);
}

std::optional<std::size_t> Router::any_ready(const std::string& model,
                                             std::optional<std::size_t> avoid) {
  const std::size_t n = entries_.size();
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = (next_ + k) % n;
    if (entries_[i].model == model && entries_[i].ready && i != avoid) {
      next_ = (i + 1) % n;
      return i;
    }
  }
  return std::nullopt;
}

void Router::release(std::size_t index) {
  auto& e = entries_.at(index);
  assert(e.in_flight > 0);
  --e.in_flight;
  if (on_release_) on_release_(index, e.model);
}

}  // namespace switchyard::gateway
