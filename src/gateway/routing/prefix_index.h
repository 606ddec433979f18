// What the gateway last sent one instance, as block hashes: the prefixes
// its engine probably still has cached. Bounded like the engine's KV cache
// and forgotten least recently used first, as vLLM evicts; within one
// prompt its tail goes before its head (vLLM frees a request's blocks in
// reverse order), so what survives is always a prefix.
#pragma once

#include <cstddef>
#include <list>
#include <span>
#include <unordered_map>

#include "gateway/routing/block_hash.h"

namespace switchyard::gateway {

class PrefixIndex {
 public:
  // Holds at most `capacity` blocks (at least 1).
  explicit PrefixIndex(std::size_t capacity);

  // How many leading blocks of `blocks` are held.
  std::size_t match(std::span<const BlockHash> blocks) const;
  // Records that the instance was sent `blocks` (now the most recently
  // used), forgetting the least recently used past the capacity.
  void insert(std::span<const BlockHash> blocks);
  void clear();
  // Shrinking forgets the least recently used at once.
  void set_capacity(std::size_t capacity);

  std::size_t size() const { return where_.size(); }
  std::size_t capacity() const { return capacity_; }

 private:
  void evict();

  std::size_t capacity_;
  std::list<BlockHash> lru_;  // most recently used first
  std::unordered_map<BlockHash, std::list<BlockHash>::iterator> where_;
};

}  // namespace switchyard::gateway
