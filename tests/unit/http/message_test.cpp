#include "http/message.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace switchyard::http {
namespace {

std::vector<std::string> rendered(const Headers& headers) {
  std::vector<std::string> out;
  for (const auto& [name, value] : headers)
    out.push_back(std::string(name) + ": " + std::string(value));
  return out;
}

TEST(Headers, KeepOrderAndSpellingAndFindIgnoringCase) {
  Headers h;
  h.add("Content-Type", "application/json");
  h.add("X-Request-Id", "abc");
  h.add("content-type", "text/plain");  // a repeat: find() returns the first
  EXPECT_EQ(h.find("CONTENT-TYPE"), "application/json");
  EXPECT_EQ(h.find("x-request-id"), "abc");
  EXPECT_FALSE(h.find("x-request"));
  EXPECT_FALSE(h.find("content-typ"));
  EXPECT_EQ(rendered(h),
            (std::vector<std::string>{"Content-Type: application/json", "X-Request-Id: abc",
                                      "content-type: text/plain"}));
}

TEST(Headers, SetReplacesEveryEntryOfTheNameAndRemoveDropsThem) {
  Headers h;
  h.add("Accept", "a");
  h.add("Via", "x");
  h.add("accept", "b");
  h.set("ACCEPT", "c");
  EXPECT_EQ(rendered(h), (std::vector<std::string>{"Via: x", "ACCEPT: c"}));
  h.remove("via");
  EXPECT_EQ(rendered(h), (std::vector<std::string>{"ACCEPT: c"}));
  h.remove("accept");
  EXPECT_TRUE(h.empty());
  EXPECT_EQ(h.begin(), h.end());
}

// find() tells a name's absence by a bit of its length and first letter:
// names of every length and case are still found.
TEST(Headers, NamesOfAnyLengthAreFoundAndAbsentOnesAreNot) {
  Headers h;
  EXPECT_FALSE(h.find("accept"));
  const std::string long_name = "X-" + std::string(68, 'n');
  h.add(long_name, "long");
  h.add("Content-Length", "1");
  EXPECT_FALSE(h.find("accept"));
  EXPECT_FALSE(h.find("anthropic-beta"));  // the same length as one there
  h.add("Accept", "a");
  EXPECT_EQ(h.find(long_name), "long");
  EXPECT_EQ(h.find("ACCEPT"), "a");
  EXPECT_FALSE(h.find("x-nope"));
  for (std::size_t n = 1; n <= 130; ++n) h.add(std::string(n, 'h'), std::to_string(n));
  for (std::size_t n = 1; n <= 130; ++n) EXPECT_EQ(h.find(std::string(n, 'H')), std::to_string(n));
  h.add("@x", "at");
  EXPECT_EQ(h.find("@X"), "at");
  h.remove("accept");
  EXPECT_FALSE(h.find("accept"));
  h.set("Accept", "b");
  EXPECT_EQ(h.find("accept"), "b");
}

TEST(Headers, EmptyValuesAndListsLargerThanTheInlineBufferStayIntact) {
  Headers h;
  h.add("X-Empty", "");
  for (int i = 0; i < 50; ++i)
    h.add("X-Header-" + std::to_string(i), std::string(100, 'a' + i % 26));
  ASSERT_EQ(h.size(), 51u);
  EXPECT_EQ(h.find("x-empty"), "");
  EXPECT_EQ(h.find("x-header-0"), std::string(100, 'a'));
  EXPECT_EQ(h.find("x-header-49"), std::string(100, 'a' + 49 % 26));
  EXPECT_EQ(h[50].name, "X-Header-49");
  const Headers copy = h;  // copies own their bytes
  h.set("X-Header-0", "changed");
  EXPECT_EQ(copy.find("x-header-0"), std::string(100, 'a'));
  EXPECT_EQ(h.find("x-header-0"), "changed");
}

TEST(Iequals, FoldsTheCaseOfLettersOnly) {
  EXPECT_TRUE(iequals("Content-Type", "content-type"));
  EXPECT_TRUE(iequals("X-REQUEST-ID", "x-request-id"));
  EXPECT_TRUE(iequals("", ""));
  EXPECT_FALSE(iequals("content-type", "content-typ"));
  EXPECT_FALSE(iequals("content-type", "content_type"));
  // Pairs 0x20 apart that are not a letter's two cases.
  EXPECT_FALSE(iequals("@", "`"));
  EXPECT_FALSE(iequals("[", "{"));
  EXPECT_FALSE(iequals("\r", "-"));
  EXPECT_FALSE(iequals("\xC1", "\xE1"));
}

TEST(QueryParam, FindsTheFirstValueDecodedAndTellsAbsentFromEmpty) {
  EXPECT_EQ(query_param("/props?model=coder", "model"), "coder");
  EXPECT_EQ(query_param("/props?autoload=false&model=a%2Fb+c", "model"), "a/b c");
  EXPECT_EQ(query_param("/props?model=one&model=two", "model"), "one");
  EXPECT_EQ(query_param("/props?model=&x=1", "model"), "");
  EXPECT_EQ(query_param("/props?model", "model"), "");
  EXPECT_EQ(query_param("/props?models=x&amodel=y", "model"), std::nullopt);
  EXPECT_EQ(query_param("/props", "model"), std::nullopt);
  EXPECT_EQ(query_param("/props?m%6Fdel=z", "model"), "z");
  // A '%' without two hex digits after it is kept, not read past the end.
  EXPECT_EQ(query_param("/p?model=100%&x=%4", "model"), "100%");
  EXPECT_EQ(query_param("/p?x=%4", "x"), "%4");
  EXPECT_EQ(query_param("/p?x=%zz", "x"), "%zz");
}

}  // namespace
}  // namespace switchyard::http
