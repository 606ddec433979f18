#include "gateway/routing/affinity.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace switchyard::gateway {

AffinityState::Instance& AffinityState::at(std::size_t index) {
  if (instances_.size() <= index) instances_.resize(index + 1);
  return instances_[index];
}

void AffinityState::sync(std::span<const Candidate> candidates) {
  std::size_t last = 0;
  for (const auto& c : candidates) last = std::max(last, c.index);
  if (!candidates.empty()) at(last);  // sized for all at once
  for (const auto& c : candidates) {
    Instance& inst = instances_[c.index];
    if (inst.generation != c.generation) {
      // A new engine process: nothing it had cached survives, and a new
      // build may cache where the old one did not.
      inst.generation = c.generation;
      inst.index.clear();
      inst.expected_hits = 0;
      inst.ever_hit = false;
      inst.never_hits = false;
    }
    const long tokens = c.kv_tokens > 0 ? c.kv_tokens : kDefaultKvTokens;
    const auto blocks = static_cast<std::size_t>(tokens / kBlockTokens);
    if (inst.index.capacity() != blocks) inst.index.set_capacity(blocks);
  }
}

std::span<const BlockHash> AffinityState::blocks(const RouteQuery& query) {
  hash_blocks(query.model, query.prompt, blocks_);
  return blocks_;
}

std::size_t AffinityState::match(std::size_t index, std::span<const BlockHash> blocks) const {
  if (index >= instances_.size() || instances_[index].never_hits) return 0;
  return instances_[index].index.match(blocks);
}

void AffinityState::record(std::size_t index, std::span<const BlockHash> blocks) {
  at(index).index.insert(blocks);
}

bool AffinityState::caches(std::size_t index) const {
  return index >= instances_.size() || !instances_[index].never_hits;
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
