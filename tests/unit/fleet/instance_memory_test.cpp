// Which instances a box's cards can never hold, alone or two together.
#include <gtest/gtest.h>

#include "fleet/instance_memory.h"

namespace switchyard::fleet {
namespace {

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

TEST(MemoryClashes, OneTooBigAloneIsNotAlsoReportedInPairs) {
  const std::map<std::string, std::uint64_t> cards = {{"0", 24 * kGiB}};
  const auto clashes =
      memory_clashes({{"big", {"0"}, {30 * kGiB}}, {"small", {"0"}, {2 * kGiB}}}, cards);
  ASSERT_EQ(clashes.size(), 1u);
  EXPECT_EQ(clashes[0].instances, std::vector<std::string>{"big"});
  EXPECT_EQ(clashes[0].need, 30 * kGiB);
  EXPECT_EQ(clashes[0].have, 24 * kGiB);
}

TEST(MemoryClashes, PairsThatShareACardAndOverflowIt) {
  const std::map<std::string, std::uint64_t> cards = {{"0", 24 * kGiB}, {"1", 24 * kGiB}};
  // On card 0: a + b = 28 and a + d = 28 overflow 24, b + d = 16 fits; on card 1: c + d = 24
  // fits exactly. a and c share no card.
  const std::vector<MemoryUser> users = {
      {"a", {"0"}, {20 * kGiB}},
      {"b", {"0"}, {8 * kGiB}},
      {"c", {"1"}, {16 * kGiB}},
      {"d", {"1", "0"}, {8 * kGiB, 8 * kGiB}},
  };
  const auto clashes = memory_clashes(users, cards);
  ASSERT_EQ(clashes.size(), 2u);
  EXPECT_EQ(clashes[0].instances, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(clashes[0].gpu, "0");
  EXPECT_EQ(clashes[0].need, 28 * kGiB);
  EXPECT_EQ(clashes[1].instances, (std::vector<std::string>{"a", "d"}));
  EXPECT_EQ(clashes[1].gpu, "0");
}

TEST(MemoryClashes, UnknownCardsAreNotJudged) {
  const auto clashes =
      memory_clashes({{"a", {"3"}, {99 * kGiB}}, {"b", {"3"}, {99 * kGiB}}}, {{"0", kGiB}});
  EXPECT_TRUE(clashes.empty());
}

}  // namespace
}  // namespace switchyard::fleet
