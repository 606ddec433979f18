// Block hashing, the per-instance prefix index and its LRU bound.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gateway/routing/block_hash.h"
#include "gateway/routing/prefix_index.h"

namespace switchyard::gateway {
namespace {

std::vector<BlockHash> hashes(std::string_view model, std::string_view prompt) {
  std::vector<BlockHash> out;
  hash_blocks(model, prompt, out);
  return out;
}

std::string text(std::size_t bytes, char fill = 'a') {
  std::string s;
  for (std::size_t i = 0; i < bytes; ++i) s.push_back(static_cast<char>(fill + i % 7));
  return s;
}

TEST(RoutingBlockHash, OnlyFullBlocks) {
  EXPECT_TRUE(hashes("m", text(kBlockBytes - 1)).empty());
  EXPECT_EQ(hashes("m", text(3 * kBlockBytes + 5)).size(), 3u);
}

TEST(RoutingBlockHash, ASharedPrefixMatchesUpToTheFirstDifferingBlock) {
  const std::string common = text(5 * kBlockBytes);
  std::string a = common + text(3 * kBlockBytes, 'k');
  std::string b = a;
  b[5 * kBlockBytes + kBlockBytes + 3] = '#';  // differs in block 6
  const auto ha = hashes("m", a), hb = hashes("m", b);
  ASSERT_EQ(ha.size(), 8u);
  ASSERT_EQ(hb.size(), 8u);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(ha[i], hb[i]) << i;
  // Chained: every block after the first difference differs too, even
  // where the bytes are equal again.
  for (std::size_t i = 6; i < 8; ++i) EXPECT_NE(ha[i], hb[i]) << i;
}

TEST(RoutingBlockHash, DifferentModelsNeverMatch) {
  BlockHolders holders;
  const std::string p = text(4 * kBlockBytes);
  const auto a = hashes("qwen-27b", p), b = hashes("qwen-27b-q8", p);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NE(a[i], b[i]) << i;
  PrefixIndex index(100);
  index.insert(a, holders);
  EXPECT_EQ(index.match(a), 4u);
  EXPECT_EQ(index.match(b), 0u);
}

TEST(RoutingPrefixIndex, MatchesTheLeadingBlocksOnly) {
  BlockHolders holders;
  PrefixIndex index(100);
  const auto sent = hashes("m", text(6 * kBlockBytes));
  index.insert(sent, holders);
  EXPECT_EQ(index.match(sent), 6u);
  const auto longer = hashes("m", text(6 * kBlockBytes) + text(4 * kBlockBytes, 'q'));
  EXPECT_EQ(index.match(longer), 6u);
  const auto other = hashes("m", text(6 * kBlockBytes, 'z'));
  EXPECT_EQ(index.match(other), 0u);
}

TEST(RoutingPrefixIndex, ForgetsTheLeastRecentlyUsedPastItsCapacity) {
  BlockHolders holders;
  PrefixIndex index(8);
  const auto a = hashes("m", text(4 * kBlockBytes, 'a'));
  const auto b = hashes("m", text(4 * kBlockBytes, 'h'));
  const auto c = hashes("m", text(4 * kBlockBytes, 'p'));
  index.insert(a, holders);
  index.insert(b, holders);
  index.insert(a, holders);  // a is used again: b is now the oldest
  index.insert(c, holders);
  EXPECT_EQ(index.size(), 8u);
  EXPECT_EQ(index.match(a), 4u);
  EXPECT_EQ(index.match(b), 0u);
  EXPECT_EQ(index.match(c), 4u);
}

// What an index holds of a prompt is a prefix, so the match is searched
// for (galloping, then halving) rather than walked: every length from none
// to all of it, and a prompt that goes on past what was sent.
TEST(RoutingPrefixIndex, FindsAMatchOfEveryLength) {
  BlockHolders holders;
  const std::string sent = text(40 * kBlockBytes);
  const auto blocks = hashes("m", sent);
  const auto longer = hashes("m", sent + text(9 * kBlockBytes, 'q'));
  for (std::size_t held = 1; held <= blocks.size(); ++held) {
    PrefixIndex index(held);
    index.insert(blocks, holders);
    EXPECT_EQ(index.match(blocks), held);
    EXPECT_EQ(index.match(longer), held);
    EXPECT_EQ(index.match(std::span(blocks).first(held / 2)), held / 2);
  }
  PrefixIndex index(100);
  index.insert(blocks, holders);
  EXPECT_EQ(index.match(std::span(blocks).first(0)), 0u);
  EXPECT_EQ(index.match(hashes("m", text(40 * kBlockBytes, 'z'))), 0u);
}

// Sessions share a system prompt: what the last prompt left at the front
// stays there, and the rest of a new prompt goes right after it, ahead of
// anything older.
TEST(RoutingPrefixIndex, APromptSharingTheLastOnesHeadIsTheMostRecentAfterIt) {
  BlockHolders holders;
  PrefixIndex index(6);
  const std::string shared = text(2 * kBlockBytes, 's');
  const auto a = hashes("m", shared + text(2 * kBlockBytes, 'a'));
  const auto b = hashes("m", shared + text(2 * kBlockBytes, 'b'));
  const auto c = hashes("m", shared + text(2 * kBlockBytes, 'c'));
  index.insert(a, holders);
  index.insert(b, holders);  // shared, b, a
  index.insert(c, holders);  // shared, c, b: a's own blocks are the oldest, and go
  EXPECT_EQ(index.size(), 6u);
  EXPECT_EQ(index.match(a), 2u);
  EXPECT_EQ(index.match(b), 4u);
  EXPECT_EQ(index.match(c), 4u);
  index.insert(b, holders);  // shared, b, c
  index.insert(a, holders);  // shared, a, b: now c's go
  EXPECT_EQ(index.match(c), 2u);
  EXPECT_EQ(index.match(b), 4u);
  EXPECT_EQ(index.match(a), 4u);
  index.insert(a, holders);  // all of it at the front already: nothing moves
  EXPECT_EQ(index.match(b), 4u);
}

TEST(RoutingPrefixIndex, APromptLongerThanTheCacheKeepsItsHead) {
  BlockHolders holders;
  PrefixIndex index(3);
  const auto long_prompt = hashes("m", text(10 * kBlockBytes));
  index.insert(long_prompt, holders);
  EXPECT_EQ(index.match(long_prompt), 3u);
  // Eviction under pressure takes a prompt's tail before its head.
  PrefixIndex small(6);
  small.insert(hashes("m", text(4 * kBlockBytes, 'a')), holders);
  small.insert(hashes("m", text(4 * kBlockBytes, 'h')), holders);
  EXPECT_EQ(small.match(hashes("m", text(4 * kBlockBytes, 'a'))), 2u);
  small.set_capacity(2, holders);
  EXPECT_EQ(small.match(hashes("m", text(4 * kBlockBytes, 'h'))), 2u);
  EXPECT_EQ(small.match(hashes("m", text(4 * kBlockBytes, 'a'))), 0u);
}

// The holders count, for every block, the indexes that hold it, through
// inserts, evictions, a shrunk capacity and a flush: the prefix policies'
// test that no other instance holds as much of a prompt as the home.
TEST(RoutingPrefixIndex, HoldersCountTheIndexesHoldingEachBlock) {
  BlockHolders holders;
  std::vector<PrefixIndex> indexes{PrefixIndex(6), PrefixIndex(9), PrefixIndex(12)};
  const std::string shared = text(2 * kBlockBytes, 's');
  std::vector<std::vector<BlockHash>> prompts;
  for (char topic = 'a'; topic < 'g'; ++topic)
    prompts.push_back(
        hashes("m", shared + text(static_cast<std::size_t>(topic - 'a' + 1) * kBlockBytes, topic)));
  const auto agree = [&](int step) {
    for (const auto& prompt : prompts)
      for (const BlockHash block : prompt) {
        std::size_t holding = 0;
        for (const auto& index : indexes) holding += index.match(std::span(&block, 1));
        ASSERT_EQ(holders.count(block), holding) << "step " << step;
      }
  };
  std::uint64_t x = 12345;
  for (int step = 0; step < 300; ++step) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    auto& index = indexes[(x >> 33) % indexes.size()];
    const auto& prompt = prompts[(x >> 40) % prompts.size()];
    if (step % 50 == 49)
      index.clear(holders);
    else if (step % 25 == 24)
      index.set_capacity(1 + (x >> 50) % 12, holders);
    else
      index.insert(prompt, holders);
    agree(step);
  }
  for (auto& index : indexes) index.clear(holders);
  EXPECT_TRUE(holders.empty());
}

}  // namespace
}  // namespace switchyard::gateway
