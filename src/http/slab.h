// Fixed-size blocks carved from large chunks, for objects that are many and
// small: they then sit side by side on their own pages instead of one or two
// on every page of the heap, where each keeps malloc_trim from returning the
// page around it; a chunk whose blocks are all free can be given back.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace switchyard::http {

class Slab {
 public:
  // Blocks of `size` bytes (aligned for any object), `per_chunk` a chunk.
  Slab(std::size_t size, std::size_t per_chunk);
  Slab(const Slab&) = delete;
  Slab& operator=(const Slab&) = delete;

  // Thread-safe. A released block is handed out again before a new chunk.
  void* allocate();
  void release(void* block);
  // Frees the chunks none of whose blocks is allocated; returns their bytes.
  std::size_t give_back();
  // The bytes of the chunks held.
  std::size_t bytes() const;

 private:
  const std::size_t size_;
  const std::size_t per_chunk_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<std::byte[]>> chunks_;
  std::vector<void*> free_;
};

}  // namespace switchyard::http
