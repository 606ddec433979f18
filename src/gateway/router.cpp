#include "gateway/router.h"

#include <cassert>

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

Router::Router(const InstanceTable& instances, std::unique_ptr<RoutingPolicy> policy)
    : instances_(instances), policy_(std::move(policy)), self_(std::make_shared<Router*>(this)) {}

std::vector<Candidate>& Router::candidates(const RouteQuery& query, bool need_slot, Refusal& why) {
  scratch_.clear();
  bool routable = false, coming = false;
  for (const auto& inst : instances_) {
    if (inst->model() != query.model || query.has_tried(inst->index)) continue;
    if (!inst->routable()) {
      coming |= inst->coming();
      continue;
    }
    routable = true;
    const int busy = in_flight(inst->index);
    if (need_slot && busy >= inst->capacity()) continue;
    scratch_.push_back(Candidate{inst->index, busy, inst->capacity()});
  }
  why = routable ? Refusal::all_slots_busy
        : coming ? Refusal::not_ready_yet
                 : Refusal::no_instance_ready;
  return scratch_;
}

std::optional<RouteLease> Router::acquire(const RouteQuery& query, Refusal* why) {
  Refusal reason;
  auto& free = candidates(query, /*need_slot=*/true, reason);
  if (free.empty()) {
    if (why) *why = reason;
    return std::nullopt;
  }
  const std::size_t index = free[policy_->pick(query, free)].index;
  if (in_flight_.size() <= index) in_flight_.resize(instances_.size(), 0);
  ++in_flight_[index];
  return RouteLease(self_, index);
}

std::optional<std::size_t> Router::pick_any(const RouteQuery& query, Refusal* why) {
  Refusal reason;
  auto& routable = candidates(query, /*need_slot=*/false, reason);
  if (routable.empty()) {
    if (why) *why = reason;
    return std::nullopt;
  }
  return routable[policy_->pick(query, routable)].index;
}

void Router::release(std::size_t index) {
  assert(index < in_flight_.size() && in_flight_[index] > 0);
  --in_flight_[index];
  if (on_release_) on_release_(index, instances_[index]->model());
}

}  // namespace switchyard::gateway
