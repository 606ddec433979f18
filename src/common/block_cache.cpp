#include "common/block_cache.h"

#include <malloc.h>
#include <pthread.h>

#include <cstdlib>
#include <new>

namespace switchyard {

void* BlockCache::take(std::size_t n) noexcept {
  if (n > kLargest) return nullptr;
  Bin& bin = bins_[class_of(n)];
  void* block = bin.head;
  if (block) {
    bin.head = *static_cast<void**>(block);
    --bin.count;
  }
  return block;
}

bool BlockCache::keep(void* block) noexcept {
  // The largest class the block holds (all of it, for glibc's blocks).
  const std::size_t usable = malloc_usable_size(block);
  if (usable < 24 || usable > kLargest) return false;
  Bin& bin = bins_[(usable - 24) / 16];
  if (bin.count == kKeptPerClass) return false;
  *static_cast<void**>(block) = bin.head;
  bin.head = block;
  ++bin.count;
  return true;
}

void BlockCache::release() noexcept {
  for (Bin& bin : bins_) {
    while (bin.head) {
      void* next = *static_cast<void**>(bin.head);
      std::free(bin.head);
      bin.head = next;
    }
    bin.count = 0;
  }
}

std::size_t BlockCache::kept() const noexcept {
  std::size_t n = 0;
  for (const Bin& bin : bins_) n += bin.count;
  return n;
}

namespace {

// Trivially destructible, so that reaching it costs no guard; a thread's
// blocks are freed by a pthread key's destructor, which runs after the
// thread's C++ thread_local destructors (which may still delete).
struct ThreadBlocks {
  BlockCache cache;
  bool registered = false;
  bool exited = false;
};
constinit thread_local ThreadBlocks t_blocks;

}  // namespace

void release_thread_blocks() noexcept {
  t_blocks.cache.release();
}

}  // namespace switchyard

#if SWITCHYARD_BLOCK_CACHE_NEW

namespace switchyard {
namespace {

pthread_key_t exit_key;
pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

void on_thread_exit(void* blocks) {
  auto* t = static_cast<ThreadBlocks*>(blocks);
  t->cache.release();
  t->exited = true;
}

void* allocate(std::size_t n) {
  if (void* block = t_blocks.cache.take(n)) return block;
  const std::size_t size = BlockCache::malloc_size(n);
  for (;;) {
    if (void* block = std::malloc(size)) return block;
    const std::new_handler handler = std::get_new_handler();
    if (!handler) throw std::bad_alloc();
    handler();
  }
}

void deallocate(void* block) noexcept {
  if (!block) return;
  ThreadBlocks& t = t_blocks;
  if (!t.exited) {
    if (!t.registered) {
      pthread_once(&exit_key_once, [] { pthread_key_create(&exit_key, on_thread_exit); });
      pthread_setspecific(exit_key, &t);
      t.registered = true;
    }
    if (t.cache.keep(block)) return;
  }
  std::free(block);
}

}  // namespace
}  // namespace switchyard

void* operator new(std::size_t n) {
  return switchyard::allocate(n);
}
void* operator new[](std::size_t n) {
  return switchyard::allocate(n);
}
void operator delete(void* block) noexcept {
  switchyard::deallocate(block);
}
void operator delete[](void* block) noexcept {
  switchyard::deallocate(block);
}
void operator delete(void* block, std::size_t) noexcept {
  switchyard::deallocate(block);
}
void operator delete[](void* block, std::size_t) noexcept {
  switchyard::deallocate(block);
}

#endif
