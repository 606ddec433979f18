#include "gateway/router.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "gateway/routing/balance.h"
#include "gateway/routing/block_hash.h"

namespace switchyard::gateway {

RouteLease& RouteLease::operator=(RouteLease&& o) noexcept {
  if (this != &o) {
    release();
    router_ = std::move(o.router_);
    instance_ = o.instance_;
    decision_ = o.decision_;
    granted_ = o.granted_;
    prompt_tokens_ = o.prompt_tokens_;
    prefill_tokens_ = o.prefill_tokens_;
  }
  return *this;
}

RouteLease::~RouteLease() {
  release();
}

void RouteLease::answering() {
  if (router_ && *router_) (*router_)->answering(instance_, prefill_tokens_);
  prefill_tokens_ = 0;
}

void RouteLease::release() {
  answering();
  if (router_ && *router_) (*router_)->release(instance_, prompt_tokens_);
  router_.reset();
}

Router::Router(const InstanceTable& instances, std::unique_ptr<RoutingPolicy> policy)
    : instances_(instances), policy_(std::move(policy)), self_(std::make_shared<Router*>(this)) {}

Candidate Router::candidate(const fleet::Instance& inst, bool need_slot) const {
  const int busy = in_flight(inst.index);
  const bool free = !need_slot || busy < inst.capacity();
  // /props's size first; vLLM's pool from its /metrics otherwise.
  const long kv = inst.kv_tokens > 0               ? inst.kv_tokens
                  : inst.index < kv_tokens_.size() ? kv_tokens_[inst.index]
                                                   : 0;
  const long prefilling = inst.index < prefilling_.size() ? prefilling_[inst.index] : 0;
  long shortest = 0;
  if (inst.index < running_.size())
    for (const long tokens : running_[inst.index])
      if (shortest == 0 || tokens < shortest) shortest = tokens;
  return Candidate{inst.index,      busy,        inst.capacity(), free,    kv,
                   inst.generation, inst.name(), prefilling,      shortest};
}

void Router::set_kv_tokens(std::size_t index, long tokens) {
  if (kv_tokens_.size() <= index) kv_tokens_.resize(index + 1, 0);
  kv_tokens_[index] = tokens;
}

std::vector<Candidate>& Router::candidates(const RouteQuery& query, bool need_slot, Refusal& why) {
  scratch_.clear();
  bool routable = false, coming = false, any_free = false;
  for (const auto& inst : instances_) {
    if (inst->model() != query.model || query.has_tried(inst->index) ||
        (query.only && *query.only != inst->index))
      continue;
    if (!inst->routable()) {
      coming |= inst->coming();
      continue;
    }
    routable = true;
    scratch_.push_back(candidate(*inst, need_slot));
    any_free |= scratch_.back().free;
  }
  why = routable ? Refusal::all_slots_busy
        : coming ? Refusal::not_ready_yet
                 : Refusal::no_instance_ready;
  if (!any_free) scratch_.clear();
  return scratch_;
}

std::optional<RouteLease> Router::acquire(const RouteQuery& query, Refusal* why) {
  Refusal reason;
  auto& routable = candidates(query, /*need_slot=*/true, reason);
  if (routable.empty()) {
    if (why) *why = reason;
    return std::nullopt;
  }
  const RouteDecision decision = policy_->pick(query, routable);
  if (decision.wait_until) {
    home_wait_until_ = *decision.wait_until;
    if (why) *why = Refusal::waiting_for_home;
    return std::nullopt;
  }
  assert(decision.position < routable.size() && routable[decision.position].free);
  const std::size_t index = routable[decision.position].index;
  if (in_flight_.size() <= index) {
    in_flight_.resize(instances_.size(), 0);
    prefilling_.resize(instances_.size(), 0);
    running_.resize(instances_.size());
  }
  ++in_flight_[index];
  const long tokens = estimated_tokens(query.prompt.size());
  running_[index].push_back(tokens);
  // What the policy expects cached there is not evaluated again.
  const double uncached = 1 - std::clamp(decision.match, 0.0, 1.0);
  const auto prefill = std::lround(static_cast<double>(tokens) * uncached);
  prefilling_[index] += prefill;
  return RouteLease(self_, index, decision, tokens, prefill);
}

std::optional<std::size_t> Router::pick_any(const RouteQuery& query, Refusal* why) {
  Refusal reason;
  auto& routable = candidates(query, /*need_slot=*/false, reason);
  if (routable.empty()) {
    if (why) *why = reason;
    return std::nullopt;
  }
  const Throughput unmeasured;  // by requests per slot alone
  return routable[soonest_free(routable, unmeasured, any_rotation_)].index;
}

void Router::finished(const RouteLease& lease, const openai::Usage& usage,
                      std::optional<std::chrono::steady_clock::time_point> first_byte) {
  if (lease.granted() == std::chrono::steady_clock::time_point{} ||
      lease.instance() >= instances_.size())
    return;
  const auto now = std::chrono::steady_clock::now();
  const auto seconds = [](auto d) { return std::chrono::duration<double>(d).count(); };
  RouteFeedback feedback{usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens,
                         seconds(now - lease.granted()), lease.decision().match};
  if (first_byte && *first_byte >= lease.granted())
    feedback.decode_seconds = seconds(now - *first_byte);
  policy_->finished(candidate(*instances_[lease.instance()], /*need_slot=*/false), feedback);
}

double Router::match(const RouteQuery& query, std::size_t index) {
  if (index >= instances_.size() || instances_[index]->model() != query.model) return 0;
  return policy_->match(query, candidate(*instances_[index], /*need_slot=*/false));
}

void Router::answering(std::size_t index, long prefill_tokens) {
  if (prefill_tokens <= 0) return;
  prefilling_[index] -= prefill_tokens;
  // Its free slots start a request sooner now: a request waiting because
  // they were behind this prefill may take one.
  if (on_release_) on_release_(index, instances_[index]->model());
}

void Router::release(std::size_t index, long prompt_tokens) {
  assert(index < in_flight_.size() && in_flight_[index] > 0);
  --in_flight_[index];
  auto& running = running_[index];
  if (const auto it = std::find(running.begin(), running.end(), prompt_tokens);
      it != running.end()) {
    *it = running.back();
    running.pop_back();
  }
  if (on_release_) on_release_(index, instances_[index]->model());
}

}  // namespace switchyard::gateway
