#include "http/read_buffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>
#include <vector>

namespace switchyard::http {
namespace {

// What a stream does at every event: its buffer given back while it waits,
// a block taken for the read (UpstreamCall::read_some).
TEST(ReadBlocks, AStreamsNextReadTakesTheBlockItsLastWaitGaveBack) {
  ReadBuffer buffer;
  buffer.reserve(kReadBlock);
  const void* block = buffer.prepare(kReadBlock).data();
  buffer.shrink_to_fit();
  EXPECT_EQ(buffer.capacity(), 0u);  // a waiting stream holds none
  buffer.reserve(kReadBlock);
  EXPECT_EQ(buffer.prepare(kReadBlock).data(), block);
}

TEST(ReadBlocks, ABufferGrownPastABlockStillReadsAndKeepsItsBytes) {
  ReadBuffer buffer;
  buffer.reserve(kReadBlock);
  const std::string body(3 * kReadBlock + 17, 'x');
  for (std::size_t at = 0; at < body.size();) {
    const std::size_t n = std::min<std::size_t>(1000, body.size() - at);
    auto room = buffer.prepare(n);
    std::copy_n(body.data() + at, n, static_cast<char*>(room.data()));
    buffer.commit(n);
    at += n;
  }
  const auto held = buffer.data();
  EXPECT_EQ(std::string(static_cast<const char*>(held.data()), held.size()), body);
}

TEST(ReadBlocks, AThreadKeepsAFewBlocksAndFreesTheRest) {
  std::thread([] {
    std::vector<void*> given;
    for (int i = 0; i < 3; ++i) given.push_back(take_read_block(kReadBlock));
    for (void* b : given) give_read_block(b, kReadBlock);
    std::vector<void*> taken;
    for (int i = 0; i < 3; ++i) taken.push_back(take_read_block(kReadBlock));
    EXPECT_EQ(taken, std::vector<void*>(given.rbegin(), given.rend()));  // last given, first taken
    for (void* b : taken) give_read_block(b, kReadBlock);
    // Other sizes are not kept: the next block is still the last one given.
    give_read_block(take_read_block(100), 100);
    void* next = take_read_block(kReadBlock);
    EXPECT_EQ(next, taken.back());
    give_read_block(next, kReadBlock);
    // Past a few, blocks go back to the heap (ASan: none lost, none freed twice).
    std::vector<void*> many;
    for (int i = 0; i < 100; ++i) many.push_back(take_read_block(kReadBlock));
    for (void* b : many) give_read_block(b, kReadBlock);
  }).join();  // the blocks a thread kept are freed as it ends
}

}  // namespace
}  // namespace switchyard::http
