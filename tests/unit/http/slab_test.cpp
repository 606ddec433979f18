// The slab that holds Asio's descriptor states: blocks that do not overlap,
// aligned for any object, side by side in chunks, reused once released, and
// a chunk given back once all its blocks are.
#include "http/slab.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

namespace switchyard::http {
namespace {

TEST(Slab, BlocksAreAlignedDistinctAndSideBySide) {
  Slab slab(100, 4);  // 100 bytes, rounded up to 112 for alignment
  std::vector<std::byte*> blocks;
  for (int i = 0; i < 10; ++i) blocks.push_back(static_cast<std::byte*>(slab.allocate()));
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(blocks[i]) % alignof(std::max_align_t), 0u);
    std::memset(blocks[i], static_cast<int>(i), 100);  // ASan: inside the chunk
  }
  std::vector<std::byte*> sorted = blocks;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 1; i < sorted.size(); ++i) EXPECT_GE(sorted[i] - sorted[i - 1], 100);
  // The first chunk's four are consecutive, in the order handed out.
  for (std::size_t i = 1; i < 4; ++i) EXPECT_EQ(blocks[i] - blocks[i - 1], 112);
  for (std::size_t i = 0; i < blocks.size(); ++i)
    EXPECT_EQ(blocks[i][99], static_cast<std::byte>(i)) << "block " << i << " was overwritten";
}

TEST(Slab, AReleasedBlockIsHandedOutAgainBeforeANewChunk) {
  Slab slab(64, 2);
  void* a = slab.allocate();
  void* b = slab.allocate();
  slab.release(a);
  EXPECT_EQ(slab.allocate(), a);
  slab.release(b);
  slab.release(a);
  const std::set<void*> again{slab.allocate(), slab.allocate()};
  EXPECT_EQ(again, (std::set<void*>{a, b}));
  EXPECT_NE(slab.allocate(), a);  // a third: from a new chunk
}

TEST(Slab, GivesBackTheChunksWhoseBlocksAreAllFree) {
  Slab slab(64, 4);
  std::vector<void*> blocks;
  for (int i = 0; i < 12; ++i) blocks.push_back(slab.allocate());  // three chunks
  ASSERT_EQ(slab.bytes(), 3u * 4 * 64);
  // The first chunk's blocks all free, one of the second's kept, the third's
  // released in another order.
  for (int i : {2, 0, 3, 1, 4, 5, 6, 11, 8, 10, 9})
    slab.release(blocks[static_cast<std::size_t>(i)]);
  EXPECT_EQ(slab.give_back(), 2u * 4 * 64);
  EXPECT_EQ(slab.bytes(), 4u * 64);
  // The kept chunk's free blocks are handed out again, then a new chunk.
  const std::set<void*> again{slab.allocate(), slab.allocate(), slab.allocate()};
  EXPECT_EQ(again, (std::set<void*>{blocks[4], blocks[5], blocks[6]}));
  EXPECT_EQ(slab.bytes(), 4u * 64);
  slab.allocate();
  EXPECT_EQ(slab.bytes(), 2u * 4 * 64);
  EXPECT_EQ(slab.give_back(), 0u);
}

}  // namespace
}  // namespace switchyard::http
