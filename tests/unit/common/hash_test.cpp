#include "common/hash.h"

#include <gtest/gtest.h>

#include <string>

namespace switchyard::hash {
namespace {

// A session id derived from the hash must mean the same conversation to
// every gateway sharing limits, whatever its build or host: the values are
// pinned (worked out independently, with little-endian words).
TEST(Hash, IsTheSameOnEveryBuildAndHost) {
  EXPECT_EQ(fold(kSeed, ""), kSeed);
  EXPECT_EQ(fold(kSeed, "switchyard"), 0x7ea0823418a7899full);
  EXPECT_EQ(piece(kSeed, "switchyard", '"'), 0x802c6aa93f3264beull);
  // Three whole steps and a partial one.
  EXPECT_EQ(fold(kSeed, "switchyard gateway, 2026: one dependable LLM service"),
            0x40eb0387b71c4eafull);
  // Every length of a partial step, at every offset: the value of each
  // prefix and suffix folded into one (pinned from the memcpy loader).
  const std::string_view text = "The quick brown fox jumps over the lazy dog, 0123456789!";
  std::uint64_t all = 0;
  for (std::size_t n = 0; n <= text.size(); ++n) all = mix(all ^ fold(kSeed, text.substr(0, n)));
  for (std::size_t n = 0; n <= text.size(); ++n) all = mix(all ^ fold(kSeed, text.substr(n)));
  EXPECT_EQ(all, 0x940b1d3e70aacc4aull);
}

TEST(Hash, PiecesKeepTheirBoundariesAndFoldsDoNot) {
  EXPECT_NE(piece(piece(kSeed, "ab"), "c"), piece(piece(kSeed, "a"), "bc"));
  EXPECT_NE(piece(kSeed, "ab", 'k'), piece(kSeed, "ab", '"'));
  // Whole steps fold as their concatenation; a partial one counts its length.
  const std::string two = "0123456789abcdefghijklmnopqrstuv";
  EXPECT_EQ(fold(fold(kSeed, two.substr(0, 16)), two.substr(16)), fold(kSeed, two));
  for (std::size_t n = 1; n < 16; ++n)
    EXPECT_NE(fold(kSeed, two.substr(0, n)), fold(kSeed, two.substr(0, n) + std::string(1, '\0')))
        << n;
}

TEST(Hash, EveryByteCounts) {
  const std::string text(100, 'x');
  const auto base = fold(kSeed, text);
  for (std::size_t i = 0; i < text.size(); ++i) {
    std::string changed = text;
    changed[i] = 'y';
    EXPECT_NE(fold(kSeed, changed), base) << i;
  }
}

}  // namespace
}  // namespace switchyard::hash
