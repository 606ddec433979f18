// The per-thread cache of freed blocks behind the program's operator new:
// a kept block serves every size of its class and no larger one, a class
// keeps a bounded number, and what is kept can be given back.
#include "common/block_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

namespace switchyard {
namespace {

void* block_for(std::size_t n) {
  return std::malloc(BlockCache::malloc_size(n));
}

TEST(BlockCache, AKeptBlockServesEverySizeOfItsClassAndNoLarger) {
  BlockCache cache;
  EXPECT_EQ(BlockCache::malloc_size(100), 104u);  // the class 89-104
  void* block = block_for(100);
  ASSERT_TRUE(cache.keep(block));
  EXPECT_EQ(cache.take(105), nullptr);
  EXPECT_EQ(cache.take(88), nullptr);
  EXPECT_EQ(cache.take(89), block);
  ASSERT_TRUE(cache.keep(block));
  EXPECT_EQ(cache.take(104), block);
  std::memset(block, 0xab, 104);  // ASan: all of the class is the block's
  std::free(block);
  EXPECT_EQ(cache.kept(), 0u);
}

TEST(BlockCache, TheSmallestClassServesEmptyAndTinyBlocks) {
  BlockCache cache;
  EXPECT_EQ(BlockCache::malloc_size(0), 24u);
  EXPECT_EQ(BlockCache::malloc_size(1), 24u);
  void* block = block_for(1);
  ASSERT_TRUE(cache.keep(block));
  EXPECT_EQ(cache.take(0), block);
  std::free(block);
}

TEST(BlockCache, ABlockIsFiledByWhatItHoldsNotByWhatItWasAskedFor) {
  BlockCache cache;
  void* small = std::malloc(40);
  ASSERT_TRUE(cache.keep(small));  // as if deleted with a larger size
  EXPECT_EQ(cache.take(56), nullptr);
  EXPECT_EQ(cache.take(40), small);
  std::free(small);
}

TEST(BlockCache, AClassKeepsABoundedNumberAndLargeBlocksNone) {
  BlockCache cache;
  std::vector<void*> blocks;
  for (unsigned i = 0; i < BlockCache::kKeptPerClass; ++i) {
    blocks.push_back(block_for(200));
    EXPECT_TRUE(cache.keep(blocks.back()));
  }
  void* one_more = block_for(200);
  EXPECT_FALSE(cache.keep(one_more));
  std::free(one_more);
  void* large = std::malloc(BlockCache::kLargest + 1);
  EXPECT_FALSE(cache.keep(large));
  std::free(large);
  EXPECT_EQ(cache.take(BlockCache::kLargest + 1), nullptr);
  EXPECT_EQ(cache.kept(), BlockCache::kKeptPerClass);
  // Handed out last kept first.
  EXPECT_EQ(cache.take(200), blocks.back());
  std::free(blocks.back());
  cache.release();
  EXPECT_EQ(cache.kept(), 0u);
  EXPECT_EQ(cache.take(200), nullptr);
}

#if SWITCHYARD_BLOCK_CACHE_NEW
// The program's operator new and delete go through the thread's cache.
// (Called as functions: a new-expression and its delete may be elided.)
TEST(BlockCache, DeleteThenNewOfTheSameSizeReusesTheBlock) {
  release_thread_blocks();
  void* first = ::operator new(300);
  const auto first_address = reinterpret_cast<std::uintptr_t>(first);
  ::operator delete(first, 300);
  void* second = ::operator new(305);  // the same class (297-312 bytes)
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(second), first_address);
  ::operator delete(second);
  release_thread_blocks();
}

TEST(BlockCache, ABlockFreedOnAnotherThreadServesThatThread) {
  void* block = ::operator new(500);
  const auto address = reinterpret_cast<std::uintptr_t>(block);
  std::uintptr_t reused = 0;
  std::thread([&] {
    ::operator delete(block, 500);
    void* again = ::operator new(500);
    reused = reinterpret_cast<std::uintptr_t>(again);
    ::operator delete(again, 500);  // kept, and freed as the thread exits
  }).join();
  EXPECT_EQ(reused, address);
}
#endif

}  // namespace
}  // namespace switchyard
