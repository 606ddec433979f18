#include "gateway/routing/affinity.h"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace switchyard::gateway {

void AffinityState::reach(std::size_t index) {
  if (seen_.size() > index) return;
  seen_.resize(index + 1);
  instances_.resize(index + 1);
}

void AffinityState::renew(const Candidate& c) {
  Seen& seen = seen_[c.index];
  Instance& inst = instances_[c.index];
  if (seen.generation != c.generation) {
    // A new engine process: nothing it had cached survives, and a new
    // build may cache where the old one did not.
    seen = Seen{c.generation};
    inst.index.clear(holders_);
    inst = Instance{};
  }
  seen.kv_tokens = c.kv_tokens;
  const long tokens = c.kv_tokens > 0 ? c.kv_tokens : kDefaultKvTokens;
  inst.index.set_capacity(static_cast<std::size_t>(tokens / kBlockTokens), holders_);
}

std::span<const BlockHash> AffinityState::blocks(const RouteQuery& query) {
  hash_blocks(query.model, query.prompt, blocks_);
  return blocks_;
}

void AffinityState::match(std::span<const Candidate> candidates, std::span<const BlockHash> blocks,
                          std::vector<std::size_t>& out) {
  out.resize(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) out[i] = match(candidates[i], blocks);
}

std::size_t AffinityState::match(const Candidate& c, std::span<const BlockHash> blocks) {
  // Every candidate of most picks: what changes rarely is only compared,
  // and an instance sent nothing is not hashed into.
  reach(c.index);
  const Seen& seen = seen_[c.index];
  if (seen.generation != c.generation || seen.kv_tokens != c.kv_tokens) renew(c);
  return seen.sent && !seen.never_hits ? instances_[c.index].index.match(blocks) : 0;
}

bool AffinityState::holds_longest(std::span<const BlockHash> blocks, std::size_t matched) const {
  // What an index holds of a prompt is a prefix (prefix_index.h): an
  // instance that matches as much or more holds the last of those blocks.
  return matched > 0 && holders_.count(blocks[matched - 1]) == 1;
}

std::optional<HomeMatch> AffinityState::surely_usable_home(
    const Homes& homes, const RouteQuery& query, std::span<const Candidate> candidates,
    std::span<const BlockHash> blocks, double balance_factor, bool longest_alone) {
  const auto known = query.session.empty() ? std::nullopt : homes.find(query.session);
  if (!known) return std::nullopt;
  const std::size_t pos = position_of(candidates, *known);
  if (pos == kNoCandidate || homes.reserved_for_other(*known, query.session)) return std::nullopt;
  const std::size_t matched = match(candidates[pos], blocks);
  if ((longest_alone && !holds_longest(blocks, matched)) ||
      !PrefillCost::surely_usable(candidates, candidates[pos], balance_factor,
                                  estimated_tokens(query.prompt.size()), matched))
    return std::nullopt;
  return HomeMatch{pos, matched};
}

void AffinityState::record(std::size_t index, std::span<const BlockHash> blocks) {
  reach(index);
  // Matched as nothing until it restarts: held, its blocks would only count
  // against the instances whose caches do hit (holds_longest).
  if (seen_[index].never_hits) return;
  PrefixIndex& held = instances_[index].index;
  held.insert(blocks, holders_);
  seen_[index].sent = held.size() > 0;
}

void AffinityState::finished(const Candidate& instance, const RouteFeedback& feedback) {
  speed_.observe(instance.index, feedback);
  reach(instance.index);
  Seen& seen = seen_[instance.index];
  Instance& inst = instances_[instance.index];
  if (seen.generation != instance.generation || inst.ever_hit || seen.never_hits) return;
  if (feedback.cached_tokens > 0) {
    inst.ever_hit = true;
    return;
  }
  // Only a request that should have hit says anything: a cold prompt
  // misses on every engine.
  if (feedback.expected < 0.5 || feedback.prompt_tokens < 2 * kBlockTokens) return;
  if (++inst.expected_hits < kNeverHitAfter) return;
  seen.never_hits = true;
  seen.sent = false;
  inst.index.clear(holders_);
  spdlog::warn(
      "routing: instance {}: its prefix cache never hits ({} requests that repeated a prefix "
      "sent to it reported 0 cached tokens; hybrid or recurrent models often cache nothing): "
      "prefix affinity for it is off until it restarts",
      *instance.name, inst.expected_hits);
}

}  // namespace switchyard::gateway
