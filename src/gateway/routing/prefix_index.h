// What the gateway last sent one instance, as block hashes: the prefixes
// its engine probably still has cached. Bounded like the engine's KV cache
// and forgotten least recently used first, as vLLM evicts; within one
// prompt its tail goes before its head (vLLM frees a request's blocks in
// reverse order), so what survives is always a prefix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>

#include "gateway/routing/block_hash.h"

namespace switchyard::gateway {

// How many of a fleet's prefix indexes hold each block, kept by the
// indexes as they change: no instance matches a prompt past a block that no
// index holds, so a pick can tell that one instance holds the longest match
// without matching the prompt against every other.
class BlockHolders {
 public:
  std::size_t count(BlockHash block) const {
    const auto it = count_.find(block);
    return it == count_.end() ? 0 : it->second;
  }
  bool empty() const { return count_.empty(); }

 private:
  friend class PrefixIndex;
  void add(BlockHash block) { ++count_[block]; }
  void remove(BlockHash block);

  std::unordered_map<BlockHash, std::uint32_t> count_;
};

// Every change to what an index holds is counted in the `holders` it is
// given, the same for the index's whole life.
class PrefixIndex {
 public:
  // Holds at most `capacity` blocks (at least 1).
  explicit PrefixIndex(std::size_t capacity);

  // How many leading blocks of `blocks` are held.
  std::size_t match(std::span<const BlockHash> blocks) const;
  // Records that the instance was sent `blocks` (now the most recently
  // used), forgetting the least recently used past the capacity.
  void insert(std::span<const BlockHash> blocks, BlockHolders& holders);
  void clear(BlockHolders& holders);
  // Shrinking forgets the least recently used at once.
  void set_capacity(std::size_t capacity, BlockHolders& holders);

  std::size_t size() const { return where_.size(); }
  std::size_t capacity() const { return capacity_; }

 private:
  void evict(BlockHolders& holders);

  std::size_t capacity_;
  std::list<BlockHash> lru_;  // most recently used first
  std::unordered_map<BlockHash, std::list<BlockHash>::iterator> where_;
};

}  // namespace switchyard::gateway
