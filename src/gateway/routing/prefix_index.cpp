#include "gateway/routing/prefix_index.h"

#include <algorithm>

namespace switchyard::gateway {

void BlockHolders::remove(BlockHash block) {
  if (const auto it = count_.find(block); it != count_.end() && --it->second == 0) count_.erase(it);
}

PrefixIndex::PrefixIndex(std::size_t capacity) : capacity_(std::max<std::size_t>(capacity, 1)) {}

std::size_t PrefixIndex::match(std::span<const BlockHash> blocks) const {
  if (where_.empty()) return 0;  // sent nothing yet, or flushed: no hashing
  // What is held of a prompt is a prefix (a block's hash covers every
  // block before it, and those are used as recently or more), so the match
  // is searched for: blocks 1, 2, 4, … until one is not held, then halving.
  // Some 2 log2(n) lookups for n blocks held, where an agent's shared
  // system prompt is thousands of blocks, held by every instance.
  const auto held = [&](std::size_t n) { return where_.contains(blocks[n - 1]); };
  std::size_t lo = 0, hi = 1;  // the first `lo` blocks are held; `hi` is not known to be
  while (hi <= blocks.size() && held(hi)) {
    lo = hi;
    hi *= 2;
  }
  hi = std::min(hi, blocks.size() + 1);
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    (held(mid) ? lo : hi) = mid;
  }
  return lo;
}

void PrefixIndex::insert(std::span<const BlockHash> blocks, BlockHolders& holders) {
  // Only the newest `capacity` blocks of a prompt longer than the cache
  // could stay; the head of the prompt is the one worth keeping.
  const std::size_t keep = std::min(blocks.size(), capacity_);
  // The blocks already at the front, in order, stay: the instance's last
  // prompt shares them (the same conversation's, or another session's with
  // the same system prompt), and comparing them costs less than a lookup.
  auto next = lru_.begin();
  std::size_t front = 0;
  while (front < keep && next != lru_.end() && *next == blocks[front]) {
    ++next;
    ++front;
  }
  // The rest go after them, each before the one that follows it.
  for (std::size_t i = keep; i-- > front;) {
    const BlockHash h = blocks[i];
    if (auto it = where_.find(h); it != where_.end()) {
      lru_.splice(next, lru_, it->second);
      next = it->second;
    } else {
      next = lru_.insert(next, h);
      where_.emplace(h, next);
      holders.add(h);
    }
  }
  evict(holders);
}

void PrefixIndex::clear(BlockHolders& holders) {
  for (const BlockHash h : lru_) holders.remove(h);
  lru_.clear();
  where_.clear();
}

void PrefixIndex::set_capacity(std::size_t capacity, BlockHolders& holders) {
  capacity_ = std::max<std::size_t>(capacity, 1);
  evict(holders);
}

void PrefixIndex::evict(BlockHolders& holders) {
  while (where_.size() > capacity_) {
    holders.remove(lru_.back());
    where_.erase(lru_.back());
    lru_.pop_back();
  }
}

}  // namespace switchyard::gateway
