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

Router::Load& Router::load(std::size_t index) {
  if (load_.size() <= index) load_.resize(instances_.size());
  return load_[index];
}

// Inline: written for each of a model's instances when its candidates are
// built, and for every request that narrows them.
inline void Router::fill(Candidate& c, const fleet::Instance& inst, bool need_slot) const {
  const Load& l = inst.index < load_.size() ? load_[inst.index] : idle_;
  c.index = inst.index;
  c.in_flight = l.in_flight;
  c.slots = inst.capacity();
  c.free = !need_slot || l.in_flight < c.slots;
  // /props's size first; vLLM's pool from its /metrics otherwise.
  c.kv_tokens = inst.kv_tokens > 0 ? inst.kv_tokens.get() : l.kv_tokens;
  c.generation = inst.generation;
  c.name = &inst.name();
  c.prefilling = l.prefilling;
  c.shortest_running = l.shortest;
}

Candidate Router::candidate(const fleet::Instance& inst, bool need_slot) const {
  Candidate c{};
  fill(c, inst, need_slot);
  return c;
}

void Router::set_kv_tokens(std::size_t index, long tokens) {
  load(index).kv_tokens = tokens;
  loaded(index);
}

Router::ModelInstances& Router::instances_of(std::string_view model) {
  for (; indexed_ < instances_.size(); ++indexed_) {
    auto& of_model = by_model_[instances_[indexed_]->model()];
    of_model.all.push_back(indexed_);
    of_model.revision = ModelInstances::kStale;
  }
  if (const auto it = by_model_.find(model); it != by_model_.end()) return it->second;
  return no_instances_;
}

std::span<const Candidate> Router::candidates(const RouteQuery& query, bool need_slot,
                                              Refusal& why) {
  ModelInstances& model = instances_of(query.model);
  const bool narrowed = !need_slot || !query.tried.empty() || query.only;
  if (narrowed)
    build(narrowed_, model.all, &query, need_slot);
  else if (model.revision != fleet::route_revision.load(std::memory_order_relaxed))
    keep(model);
  const Candidates& built = narrowed ? narrowed_ : model.kept;
  why = !built.routable.empty() ? Refusal::all_slots_busy
        : built.coming          ? Refusal::not_ready_yet
                                : Refusal::no_instance_ready;
  if (std::none_of(built.routable.begin(), built.routable.end(),
                   [](const Candidate& c) { return c.free; }))
    return {};
  if (!built.asleep) return built.routable;
  return without_sleepers(built.routable);
}

void Router::build(Candidates& out, const std::vector<std::size_t>& instances,
                   const RouteQuery* narrowing, bool need_slot) const {
  out.routable.clear();
  out.coming = out.asleep = false;
  for (const std::size_t i : instances) {
    if (narrowing && (narrowing->has_tried(i) || (narrowing->only && *narrowing->only != i)))
      continue;
    const fleet::Instance& inst = *instances_[i];
    if (!inst.routable()) {
      out.coming |= inst.coming();
      continue;
    }
    fill(out.routable.emplace_back(), inst, need_slot);
    out.asleep |= inst.engine_sleep != fleet::Instance::EngineSleep::awake;
  }
}

void Router::keep(ModelInstances& model) {
  model.revision = fleet::route_revision.load(std::memory_order_relaxed);
  build(model.kept, model.all, nullptr, /*need_slot=*/true);
  if (kept_.size() < instances_.size()) kept_.resize(instances_.size());
  for (const std::size_t i : model.all) kept_[i] = Kept{};
  for (std::size_t at = 0; at < model.kept.routable.size(); ++at)
    kept_[model.kept.routable[at].index] = Kept{&model, at};
}

void Router::loaded(std::size_t index) {
  if (index >= kept_.size() || kept_[index].model == nullptr) return;
  auto& [model, position] = kept_[index];
  if (model->revision == fleet::route_revision.load(std::memory_order_relaxed))
    fill(model->kept.routable[position], *instances_[index], /*need_slot=*/true);
}

// An engine asleep by its own word (llama-server --sleep-idle-seconds) loads
// its model again for the next request, with an empty cache: the last resort
// while an awake one has room.
std::span<const Candidate> Router::without_sleepers(std::span<const Candidate> candidates) {
  const auto sleeps = [this](const Candidate& c) {
    return instances_[c.index]->engine_sleep != fleet::Instance::EngineSleep::awake;
  };
  scratch_.assign(candidates.begin(), candidates.end());
  if (std::any_of(scratch_.begin(), scratch_.end(),
                  [&](const Candidate& c) { return c.free && !sleeps(c); }))
    std::erase_if(scratch_, sleeps);
  return scratch_;
}

std::optional<RouteLease> Router::acquire(const RouteQuery& query, Refusal* why) {
  Refusal reason;
  const auto routable = candidates(query, /*need_slot=*/true, reason);
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
  Load& l = load(index);
  ++l.in_flight;
  ++l.started;
  const long tokens = estimated_tokens(query.prompt.size());
  l.running.push_back(tokens);
  l.shortest = l.shortest == 0 ? tokens : std::min(l.shortest, tokens);
  // What the policy expects cached there is not evaluated again.
  const double uncached = 1 - std::clamp(decision.match, 0.0, 1.0);
  const auto prefill = std::lround(static_cast<double>(tokens) * uncached);
  l.prefilling += prefill;
  loaded(index);
  return RouteLease(self_, index, decision, tokens, prefill);
}

std::optional<std::size_t> Router::pick_any(const RouteQuery& query, Refusal* why) {
  Refusal reason;
  const auto routable = candidates(query, /*need_slot=*/false, reason);
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
  load_[index].prefilling -= prefill_tokens;
  loaded(index);
  // Its free slots start a request sooner now: a request waiting because
  // they were behind this prefill may take one.
  if (on_release_) on_release_(index, instances_[index]->model());
}

void Router::release(std::size_t index, long prompt_tokens) {
  assert(index < load_.size() && load_[index].in_flight > 0);
  Load& l = load_[index];
  --l.in_flight;
  if (const auto it = std::find(l.running.begin(), l.running.end(), prompt_tokens);
      it != l.running.end()) {
    *it = l.running.back();
    l.running.pop_back();
  }
  l.shortest = l.running.empty() ? 0 : *std::min_element(l.running.begin(), l.running.end());
  loaded(index);
  if (on_release_) on_release_(index, instances_[index]->model());
}

}  // namespace switchyard::gateway
