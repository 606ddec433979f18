// vLLM's paged KV cache, reduced to what a gateway or benchmark can observe:
// a fixed pool of blocks of `block_size` tokens, reference-counted, where a
// freed block that holds a full, hashed block of tokens stays cached (and
// can be hit by a later request with the same prefix) until it is evicted,
// least recently freed first, to make room.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

namespace switchyard::sim {

using BlockId = int;
using BlockHash = std::uint64_t;

class KvPool {
 public:
  // Preconditions: num_blocks >= 1, block_size >= 1.
  KvPool(int num_blocks, int block_size);

  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  int block_size() const { return block_size_; }
  // Blocks that allocate() can hand out: never used, or cached and unused.
  int free_blocks() const { return free_count_; }
  // Blocks held by at least one sequence, over all blocks (vLLM's
  // kv_cache_usage_perc, 0..1).
  double usage() const;

  // `n` blocks for one sequence, each with a reference count of 1, taking
  // never-used blocks first and then evicting cached ones (least recently
  // freed first, forgetting their hash); nullopt (and nothing taken) when
  // fewer than n are free.
  std::optional<std::vector<BlockId>> allocate(int n);

  // The cached block holding `hash`, if any (in use or not).
  std::optional<BlockId> lookup(BlockHash hash) const;
  // Whether taking `block` (a lookup() hit) uses up one of free_blocks().
  bool is_free(BlockId block) const { return blocks_[block].refs == 0; }
  // Another reference to a lookup() hit.
  void acquire(BlockId block);

  // Records that `block` now holds a full block whose chained hash is
  // `hash`, so later lookups can hit it. A hash already cached elsewhere is
  // left pointing at the first block, as vLLM does.
  void register_hash(BlockId block, BlockHash hash);

  // Drops one reference to each block; a block nobody holds becomes free
  // (still cached if hashed). Freed in reverse order, so a sequence's tail
  // blocks are evicted before its head, which other prompts share more
  // often.
  void release(const std::vector<BlockId>& blocks);

 private:
  struct Block {
    int refs = 0;
    std::optional<BlockHash> hash;
    std::list<BlockId>::iterator in_free_list;
    bool listed = false;
  };
  void unlist(BlockId id);

  const int block_size_;
  std::vector<Block> blocks_;
  // Free blocks, eviction order: front first. Never-used blocks are pushed
  // to the front, freed cached blocks to the back.
  std::list<BlockId> free_list_;
  int free_count_ = 0;
  std::unordered_map<BlockHash, BlockId> by_hash_;
};

}  // namespace switchyard::sim
