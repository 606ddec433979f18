#include "sim/kv_pool.h"

namespace switchyard::sim {

KvPool::KvPool(int num_blocks, int block_size) : block_size_(block_size), blocks_(num_blocks) {
  for (BlockId id = 0; id < num_blocks; ++id) {
    blocks_[id].in_free_list = free_list_.insert(free_list_.end(), id);
    blocks_[id].listed = true;
  }
  free_count_ = num_blocks;
}

double KvPool::usage() const {
  return blocks_.empty() ? 0.0 : 1.0 - static_cast<double>(free_count_) / num_blocks();
}

void KvPool::unlist(BlockId id) {
  auto& b = blocks_[id];
  if (!b.listed) return;
  free_list_.erase(b.in_free_list);
  b.listed = false;
  --free_count_;
}

std::optional<std::vector<BlockId>> KvPool::allocate(int n) {
  if (n > free_count_) return std::nullopt;
  std::vector<BlockId> out;
  out.reserve(n);
  for (int i = 0; i < n; ++i) {
    const BlockId id = free_list_.front();
    unlist(id);
    auto& b = blocks_[id];
    if (b.hash) {  // evict: the cached content is gone
      if (auto it = by_hash_.find(*b.hash); it != by_hash_.end() && it->second == id)
        by_hash_.erase(it);
      b.hash.reset();
    }
    b.refs = 1;
    out.push_back(id);
  }
  return out;
}

std::optional<BlockId> KvPool::lookup(BlockHash hash) const {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  return it->second;
}

void KvPool::acquire(BlockId block) {
  unlist(block);
  ++blocks_[block].refs;
}

void KvPool::register_hash(BlockId block, BlockHash hash) {
  auto& b = blocks_[block];
  if (b.hash || by_hash_.contains(hash)) return;
  b.hash = hash;
  by_hash_.emplace(hash, block);
}

void KvPool::release(const std::vector<BlockId>& blocks) {
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    auto& b = blocks_[*it];
    if (b.refs == 0 || --b.refs > 0) continue;
    // Uncached blocks are reused first; cached ones wait at the back.
    b.in_free_list = b.hash ? free_list_.insert(free_list_.end(), *it)
                            : free_list_.insert(free_list_.begin(), *it);
    b.listed = true;
    ++free_count_;
  }
}

}  // namespace switchyard::sim
