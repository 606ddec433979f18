#include "common/byte_search.h"

#include <gtest/gtest.h>

#include <string>

namespace switchyard {
namespace {

// Every occurrence string_view::find sees, ByteSearch sees at the same place.
void expect_as_find(std::string_view haystack, std::string_view needle) {
  const ByteSearch search(needle);
  for (std::size_t from = 0; from <= haystack.size(); ++from) {
    const std::size_t want = haystack.find(needle, from);
    const auto got = search.find(haystack, from);
    if (want == std::string_view::npos)
      EXPECT_FALSE(got) << "from " << from;
    else
      EXPECT_EQ(got, want) << "from " << from;
  }
}

TEST(ByteSearch, FindsAsStringFindDoes) {
  expect_as_find(R"(data: {"model":"a","model":"b"})", R"("model":)");
  expect_as_find("aaaaab", "aab");
  expect_as_find("abcabcabd", "abcabd");
  expect_as_find("short", "longer than the haystack");
  expect_as_find("x", "x");
}

// Skips are kept in a byte: a needle longer than 255 bytes skips at most 255
// and still finds every occurrence.
TEST(ByteSearch, ANeedleLongerThanASkipStillMatches) {
  const std::string needle = "\"model\":\"" + std::string(300, 'm') + "q\"";
  const std::string haystack =
      std::string(700, 'q') + needle + std::string(10, 'm') + needle + std::string(300, 'm') + "q";
  expect_as_find(haystack, needle);
  expect_as_find(std::string(1000, 'm'), std::string(400, 'm') + "q");
}

}  // namespace
}  // namespace switchyard
