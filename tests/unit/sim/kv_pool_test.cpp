#include "sim/kv_pool.h"

#include <gtest/gtest.h>

#include "sim/prefix_cache.h"

namespace switchyard::sim {
namespace {

TEST(KvPool, AllocatesUntilFullAndFreesBack) {
  KvPool pool(4, 16);
  auto a = pool.allocate(3);
  ASSERT_TRUE(a);
  EXPECT_EQ(pool.free_blocks(), 1);
  EXPECT_DOUBLE_EQ(pool.usage(), 0.75);
  EXPECT_FALSE(pool.allocate(2));
  EXPECT_EQ(pool.free_blocks(), 1);  // a failed allocation takes nothing
  pool.release(*a);
  EXPECT_EQ(pool.free_blocks(), 4);
}

TEST(KvPool, FreedHashedBlocksStayCachedUntilEvicted) {
  KvPool pool(2, 4);
  auto a = pool.allocate(1);
  pool.register_hash((*a)[0], 42);
  pool.release(*a);
  ASSERT_TRUE(pool.lookup(42));
  EXPECT_TRUE(pool.is_free(*pool.lookup(42)));
  // A hit takes the cached block back.
  pool.acquire(*pool.lookup(42));
  EXPECT_EQ(pool.free_blocks(), 1);
  pool.release({(*a)[0]});
  // Allocating everything evicts it: never-used blocks go first.
  auto b = pool.allocate(1);
  EXPECT_TRUE(pool.lookup(42));
  auto c = pool.allocate(1);
  EXPECT_FALSE(pool.lookup(42));
}

TEST(PrefixCache, ChainedHashesIdentifyPrefixes) {
  const std::vector<Token> a{1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<Token> b{1, 2, 3, 4, 9, 9, 9, 9};
  const std::vector<Token> c{9, 9, 9, 9, 5, 6, 7, 8};
  EXPECT_EQ(block_hash(0, a, 0, 4), block_hash(0, b, 0, 4));
  EXPECT_NE(block_hash(0, a, 0, 4), block_hash(0, c, 0, 4));
  // Same second block, different first: different chained hash.
  EXPECT_NE(block_hash(block_hash(0, a, 0, 4), a, 1, 4),
            block_hash(block_hash(0, c, 0, 4), c, 1, 4));
  EXPECT_EQ(common_prefix(a, b), 4);
  EXPECT_EQ(common_prefix(a, a), 8);
}

}  // namespace
}  // namespace switchyard::sim
