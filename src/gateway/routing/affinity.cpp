#include "gateway/routing/affinity.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace switchyard::gateway {

AffinityState::Instance& AffinityState::at(std::size_t index) {
  if (instances_.size() <= index) instances_.resize(index + 1);
  return instances_[index];
}

void AffinityState::renew(Instance& inst, const Candidate& c) {
  if (inst.generation != c.generation) {
    // A new engine process: nothing it had cached survives, and a new
    // build may cache where the old one did not.
    inst.generation = c.generation;
    inst.index.clear();
    inst.expected_hits = 0;
    inst.ever_hit = false;
    inst.never_hits = false;
  }
  inst.kv_tokens = c.kv_tokens;
  const long tokens = c.kv_tokens > 0 ? c.kv_tokens : kDefaultKvTokens;
  inst.index.set_capacity(static_cast<std::size_t>(tokens / kBlockTokens));
}

std::span<const BlockHash> AffinityState::blocks(const RouteQuery& query) {
  hash_blocks(query.model, query.prompt, blocks_);
  return blocks_;
}

void AffinityState::match(std::span<const Candidate> candidates, std::span<const BlockHash> blocks,
                          std::vector<std::size_t>& out) {
  out.resize(candidates.size());
  // Every candidate of every pick: what changes rarely is only compared,
  // and an instance sent nothing is not hashed into.
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    if (instances_.size() <= c.index) instances_.resize(c.index + 1);
    Instance& inst = instances_[c.index];
    if (inst.generation != c.generation || inst.kv_tokens != c.kv_tokens) renew(inst, c);
    out[i] = inst.never_hits || inst.index.size() == 0 ? 0 : inst.index.match(blocks);
  }
}

void AffinityState::record(std::size_t index, std::span<const BlockHash> blocks) {
  at(index).index.insert(blocks);
}

void AffinityState::finished(const Candidate& instance, const RouteFeedback& feedback) {
  speed_.observe(instance.index, feedback);
  Instance& inst = at(instance.index);
  if (inst.generation != instance.generation || inst.ever_hit || inst.never_hits) return;
  if (feedback.cached_tokens > 0) {
    inst.ever_hit = true;
    return;
  }
  // Only a request that should have hit says anything: a cold prompt
  // misses on every engine.
  if (feedback.expected < 0.5 || feedback.prompt_tokens < 2 * kBlockTokens) return;
  if (++inst.expected_hits < kNeverHitAfter) return;
  inst.never_hits = true;
  inst.index.clear();
  spdlog::warn(
      "routing: instance {}: its prefix cache never hits ({} requests that repeated a prefix "
      "sent to it reported 0 cached tokens; hybrid or recurrent models often cache nothing): "
      "prefix affinity for it is off until it restarts",
      instance.name, inst.expected_hits);
}

}  // namespace switchyard::gateway
