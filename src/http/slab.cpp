#include "http/slab.h"

#include <algorithm>
#include <functional>

namespace switchyard::http {

namespace {
constexpr std::size_t kAlign = alignof(std::max_align_t);
}

Slab::Slab(std::size_t size, std::size_t per_chunk)
    : size_((size + kAlign - 1) / kAlign * kAlign), per_chunk_(per_chunk > 0 ? per_chunk : 1) {}

void* Slab::allocate() {
  const std::lock_guard lock(mutex_);
  if (free_.empty()) {
    chunks_.push_back(std::make_unique<std::byte[]>(size_ * per_chunk_));
    std::byte* chunk = chunks_.back().get();
    free_.reserve(free_.size() + per_chunk_);
    for (std::size_t i = per_chunk_; i-- > 0;) free_.push_back(chunk + i * size_);
  }
  void* block = free_.back();
  free_.pop_back();
  return block;
}

void Slab::release(void* block) {
  const std::lock_guard lock(mutex_);
  free_.push_back(block);
}

std::size_t Slab::give_back() {
  const std::lock_guard lock(mutex_);
  const auto higher = [](const void* a, const void* b) { return std::greater<>()(a, b); };
  // Both from the highest address down: a chunk's free blocks are then the
  // run of free_ at or above its start that the chunks above it left.
  std::sort(free_.begin(), free_.end(), higher);
  std::sort(chunks_.begin(), chunks_.end(),
            [&](const auto& a, const auto& b) { return higher(a.get(), b.get()); });
  std::vector<std::unique_ptr<std::byte[]>> chunks;
  std::vector<void*> free;
  std::size_t f = 0, given = 0;
  for (auto& chunk : chunks_) {
    const std::size_t first = f;
    while (f < free_.size() && std::greater_equal<>()(free_[f], static_cast<void*>(chunk.get())))
      ++f;
    if (f - first == per_chunk_) {
      given += size_ * per_chunk_;
      continue;  // the chunk is freed with chunks_
    }
    free.insert(free.end(), free_.begin() + first, free_.begin() + f);
    chunks.push_back(std::move(chunk));
  }
  chunks_ = std::move(chunks);
  free_ = std::move(free);
  return given;
}

std::size_t Slab::bytes() const {
  const std::lock_guard lock(mutex_);
  return chunks_.size() * size_ * per_chunk_;
}

}  // namespace switchyard::http
