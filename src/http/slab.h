// Fixed-size blocks carved from large chunks, for objects that are many,
// small and kept for the process's life: they then sit side by side on
// their own pages instead of one or two on every page of the heap, where
// each keeps malloc_trim from returning the page around it.
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

  // Thread-safe; memory is never given back to malloc, only to the slab.
  void* allocate();
  void release(void* block);

 private:
  const std::size_t size_;
  const std::size_t per_chunk_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<std::byte[]>> chunks_;
  std::vector<void*> free_;
};

}  // namespace switchyard::http
