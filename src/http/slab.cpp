#include "http/slab.h"

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

}  // namespace switchyard::http
