// Small heap blocks kept per thread between a `delete` and the next `new` of
// their size.
//
// A request allocates some 20 blocks (coroutine frames, strings, the
// upstream call) and a relayed chunk 6, each freed within the request;
// glibc's malloc and free took some 200 instructions a pair, 8 % of a
// request's (docs/performance.md). Kept in per-thread lists by size class,
// a pair is a few dozen. The program's `operator new` and `operator delete`
// are replaced (block_cache.cpp) to go through them; malloc still owns
// every block, so a block may be freed on another thread or with free().
#pragma once

#include <cstddef>

// Whether the program's operator new and delete go through the cache: not
// under AddressSanitizer, whose own operators catch a use after free that a
// kept block would hide.
#if defined(__SANITIZE_ADDRESS__)
#define SWITCHYARD_BLOCK_CACHE_NEW 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SWITCHYARD_BLOCK_CACHE_NEW 0
#endif
#endif
#ifndef SWITCHYARD_BLOCK_CACHE_NEW
#define SWITCHYARD_BLOCK_CACHE_NEW 1
#endif

namespace switchyard {

class BlockCache {
 public:
  // A class is a size glibc's blocks hold: 24, 40, 56, ... bytes (a chunk
  // of 16 m bytes holds 16 m - 8), up to kLargest, the largest coroutine
  // frame a request has (some 3 KiB). A class keeps at most kKeptPerClass
  // blocks; in practice a thread keeps the dozen classes a request uses,
  // tens of KiB.
  static constexpr std::size_t kLargest = 4104;
  static constexpr unsigned kKeptPerClass = 16;

  // What to ask malloc for when `n` bytes are wanted and no block is kept:
  // its class's size, what malloc would have given anyway.
  static constexpr std::size_t malloc_size(std::size_t n) {
    return n <= kLargest ? class_of(n) * 16 + 24 : n;
  }

  // A kept block for `n` bytes, or null.
  void* take(std::size_t n) noexcept;
  // Keeps `block` (from malloc) unless its class is full or it is larger
  // than kLargest; false: the caller frees it. Its class is what malloc says
  // the block holds, so a caller's wrong size cannot make it serve more.
  bool keep(void* block) noexcept;
  // Frees every kept block.
  void release() noexcept;
  std::size_t kept() const noexcept;

 private:
  static constexpr std::size_t class_of(std::size_t n) { return n <= 24 ? 0 : (n - 9) / 16; }

  struct Bin {
    void* head;
    unsigned count;
  };
  Bin bins_[(kLargest - 24) / 16 + 1]{};
};

// Frees the blocks the calling thread keeps (the heap trim, before it gives
// the heap back). A thread's blocks are freed when it exits.
void release_thread_blocks() noexcept;

}  // namespace switchyard
