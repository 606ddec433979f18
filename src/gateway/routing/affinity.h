// What the two affinity policies (prefix-affinity, session) keep per
// instance: the prefix index of what it was sent, whether its own prefix
// cache has been seen to hit, and its delivered rate. Indexes are flushed
// when an instance's generation changes (its engine restarted) and sized
// by its KV cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "gateway/routing/balance.h"
#include "gateway/routing/block_hash.h"
#include "gateway/routing/homes.h"
#include "gateway/routing/policy.h"
#include "gateway/routing/prefix_index.h"

namespace switchyard::gateway {

// A candidate, by position, and the leading blocks of the prompt it holds.
struct HomeMatch {
  std::size_t position;
  std::size_t matched;
};

// The share of a prompt's `blocks` that an instance holding `matched` of
// them holds (RouteDecision::match); 0 for a prompt shorter than a block.
inline double share_held(std::span<const BlockHash> blocks, std::size_t matched) {
  return blocks.empty() ? 0.0 : static_cast<double>(matched) / static_cast<double>(blocks.size());
}

class AffinityState {
 public:
  // Tokens assumed cached by an instance whose KV cache size is unknown
  // (configured slots, engines without /props): two 32K-token slots.
  static constexpr long kDefaultKvTokens = 65536;
  // Requests the gateway expected to hit (half their prompt or more cached
  // there) that an instance must report without one cached token before
  // affinity for it stops.
  static constexpr int kNeverHitAfter = 8;

  // The prompt's blocks for `query` (valid until the next call).
  std::span<const BlockHash> blocks(const RouteQuery& query);
  // Writes into `out`, by position, the leading blocks of `blocks` each of
  // `candidates` was last sent (0 for an instance whose prefix cache never
  // hits), first bringing its state up to the candidate: a new instance, a
  // new generation (flushed), a KV size learned later.
  void match(std::span<const Candidate> candidates, std::span<const BlockHash> blocks,
             std::vector<std::size_t>& out);
  // The same for one candidate.
  std::size_t match(const Candidate& c, std::span<const BlockHash> blocks);
  // Whether the instance that holds `matched` leading blocks of `blocks`
  // (match()) holds more of them than any other instance: no other index
  // holds the last of those.
  bool holds_longest(std::span<const BlockHash> blocks, std::size_t matched) const;
  // The session's home among `candidates` and what it holds of `blocks`,
  // when the home surely may take the request now (PrefillCost::
  // surely_usable, and kept for no other session) and, if `longest_alone`,
  // holds more of the prompt than any other instance (holds_longest, asked
  // first: it is one lookup, the other test two passes over the
  // candidates): both affinity policies' usual pick, found without
  // matching the prompt against every candidate.
  std::optional<HomeMatch> surely_usable_home(const Homes& homes, const RouteQuery& query,
                                              std::span<const Candidate> candidates,
                                              std::span<const BlockHash> blocks,
                                              double balance_factor, bool longest_alone);
  void record(std::size_t index, std::span<const BlockHash> blocks);
  void finished(const Candidate& instance, const RouteFeedback& feedback);

  const Throughput& speed() const { return speed_; }

 private:
  // What every pick reads of each candidate, apart from the rest and side
  // by side: a pick visits hundreds, and their whole state did not stay in
  // the L1 cache between requests.
  struct Seen {
    std::uint64_t generation = 0;
    long kv_tokens = 0;       // Candidate::kv_tokens when the index was sized
    bool sent = false;        // its index holds blocks
    bool never_hits = false;  // affinity stopped (logged once)
  };
  struct Instance {
    PrefixIndex index{kDefaultKvTokens / kBlockTokens};
    int expected_hits = 0;  // finished requests expected to hit, none did
    bool ever_hit = false;
  };
  // Sized for fleet index `index`.
  void reach(std::size_t index);
  void renew(const Candidate& c);

  std::vector<Seen> seen_;           // by fleet index
  std::vector<Instance> instances_;  // by fleet index
  std::vector<BlockHash> blocks_;    // reused by blocks()
  BlockHolders holders_;             // of every instance's index
  Throughput speed_;
};

}  // namespace switchyard::gateway
