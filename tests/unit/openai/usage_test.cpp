#include "openai/usage.h"

#include <gtest/gtest.h>

namespace switchyard::openai {
namespace {

TEST(FindUsage, ReadsTheTopLevelUsageObject) {
  const auto u =
      find_usage(R"({"id":"x","choices":[{"message":{"content":"hi"}}],)"
                 R"("usage":{"prompt_tokens":31,"completion_tokens":24,"total_tokens":55,)"
                 R"("prompt_tokens_details":{"cached_tokens":16}}})");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->prompt_tokens, 31);
  EXPECT_EQ(u->completion_tokens, 24);
  EXPECT_EQ(u->cached_tokens, 16);
}

TEST(FindUsage, WhitespaceAndFieldOrderDoNotMatter) {
  const auto u = find_usage(
      "{\n  \"usage\" :\t{ \"completion_tokens\": 7, \"prompt_tokens\": 3 },\n"
      "  \"id\": \"y\"\n}");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->prompt_tokens, 3);
  EXPECT_EQ(u->completion_tokens, 7);
  EXPECT_EQ(u->cached_tokens, 0);
}

TEST(FindUsage, IgnoresUsageThatIsNotATopLevelKey) {
  // Nested, inside strings (escaped quotes included), or a string value.
  EXPECT_FALSE(find_usage(R"({"meta":{"usage":{"prompt_tokens":1}}})"));
  EXPECT_FALSE(find_usage(R"({"content":"\"usage\":{\"prompt_tokens\":1}"})"));
  EXPECT_FALSE(find_usage(R"({"content":"say \"usage","x":1})"));
  EXPECT_FALSE(find_usage(R"({"label":"usage","n":{"prompt_tokens":2}})"));
  EXPECT_FALSE(find_usage(R"([{"usage":{"prompt_tokens":1}}])"));
  // A nested one first does not hide the real one.
  const auto u =
      find_usage(R"({"meta":{"usage":{"prompt_tokens":1}},"usage":{"prompt_tokens":9}})");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->prompt_tokens, 9);
}

TEST(FindUsage, EscapedBackslashesBeforeAQuoteEndTheString) {
  // "a\\" is the two characters a and a backslash: the string ends there.
  const auto u =
      find_usage(R"({"content":"a\\","usage":{"prompt_tokens":4,"completion_tokens":5}})");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->completion_tokens, 5);
}

TEST(FindUsage, StreamChunkWithNullUsageHasNone) {
  EXPECT_FALSE(find_usage(R"({"choices":[{"delta":{"content":"a"}}],"usage":null})"));
  EXPECT_FALSE(find_usage(R"({"choices":[]})"));
}

TEST(FindUsage, AnthropicCountsCachedInputAsPrompt) {
  // llama-server's message_start (captured): usage inside `message`.
  const auto start =
      find_usage(R"({"type":"message_start","message":{"id":"x","model":"/m.gguf","usage":)"
                 R"({"cache_read_input_tokens":45,"input_tokens":1,"output_tokens":0}}})");
  ASSERT_TRUE(start);
  EXPECT_EQ(start->prompt_tokens, 46);
  EXPECT_EQ(start->cached_tokens, 45);
  auto delta = find_usage(
      R"({"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":12}})");
  ASSERT_TRUE(delta);
  Usage total = *start;
  total.merge(*delta);
  EXPECT_EQ(total.prompt_tokens, 46);
  EXPECT_EQ(total.completion_tokens, 12);
}

TEST(FindUsage, LlamacppNativeCompletion) {
  const auto u = find_usage(
      R"({"content":"","stop":true,"tokens_predicted":16,"tokens_evaluated":7,"timings":{}})");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->prompt_tokens, 7);
  EXPECT_EQ(u->completion_tokens, 16);
}

TEST(FindUsage, BrokenInputIsNotAnError) {
  EXPECT_FALSE(find_usage(""));
  EXPECT_FALSE(find_usage("{\"usage\":{\"prompt_tokens\":1"));
  EXPECT_FALSE(find_usage("{\"usage\":{\"prompt_tokens\":}}"));
  EXPECT_FALSE(find_usage("{\"unterminated"));
  EXPECT_FALSE(find_usage("{\"a\":\"\\"));
}

}  // namespace
}  // namespace switchyard::openai
