#include "openai/delta_template.h"

#include <gtest/gtest.h>

#include "openai/response_rewrite.h"

namespace switchyard::openai {
namespace {

std::string chunk(std::string_view text, std::string_view model = "/m.gguf",
                  std::string_view created = "1") {
  return "data: {\"choices\":[{\"delta\":{\"content\":\"" + std::string(text) +
         "\"}}],\"created\":" + std::string(created) + ",\"model\":\"" + std::string(model) +
         "\"}\n\n";
}

TEST(DeltaText, FindsTheFirstNonEmptyTextString) {
  const std::string e = chunk("a \\\"b\\\"");
  const auto t = delta_text(e);
  ASSERT_TRUE(t);
  EXPECT_EQ(e.substr(t->begin, t->end - t->begin), "a \\\"b\\\"");
  EXPECT_FALSE(delta_text("data: {\"choices\":[{\"delta\":{\"content\":\"\"}}]}\n\n"));
  EXPECT_FALSE(delta_text("data: {\"choices\":[{\"delta\":{\"content\":null}}]}\n\n"));
  const std::string anthropic =
      "event: content_block_delta\ndata: {\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n";
  ASSERT_TRUE(delta_text(anthropic));
}

// The next delta is rewritten from the template exactly as the full path
// would rewrite it; a delta whose bytes around the text differ, or whose
// text would close early or escape the closing quote, takes the full path.
TEST(DeltaTemplate, RewritesTheNextDeltaAsTheFullPathWould) {
  ResponseRewriter fast("qwen", false);
  std::string out;
  EXPECT_TRUE(fast.rewrite_event(chunk(" one"), out));
  out.clear();
  const std::string cases[] = {chunk(" two"), chunk("x\\\\"), chunk("q\\\"", "/m.gguf", "2"),
                               chunk("\\u00e9"), chunk(" three")};
  for (const auto& e : cases) {
    ResponseRewriter slow("qwen", false);
    std::string expected;
    EXPECT_TRUE(slow.rewrite_event(e, expected));
    out.clear();
    EXPECT_TRUE(fast.rewrite_event(e, out)) << e;
    EXPECT_EQ(out, expected) << e;
  }
}

TEST(DeltaTemplate, RefusesWhatIsNotTheSameStructure) {
  DeltaTemplate t;
  const std::string first = chunk("ab");
  const auto span = delta_text(first);
  ASSERT_TRUE(span);
  t.remember(first, *span, first, std::string::npos);
  std::string out;
  // A quote that closes the string early: the rest is JSON, not text.
  EXPECT_FALSE(t.apply(chunk("a\",\"model\":\"x"), out));
  // An odd backslash run at the end escapes the tail's quote.
  const std::string head = first.substr(0, span->begin);
  const std::string tail = first.substr(span->end);
  EXPECT_FALSE(t.apply(head + "a\\" + tail, out));
  EXPECT_FALSE(t.apply(chunk("ab", "/m.gguf", "3"), out));
  EXPECT_FALSE(t.apply(head + tail, out));
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(t.apply(head + "a\\\\" + tail, out));
  EXPECT_EQ(out, head + "a\\\\" + tail);
}

// The next delta found at the start of what follows it: its end is where
// the template's tail ends after the text's closing quote.
TEST(DeltaTemplate, AppliesToTheEventAtTheStartOfWhatFollows) {
  ResponseRewriter r("qwen", false);
  std::string out;
  EXPECT_TRUE(r.rewrite_event(chunk("a"), out));
  out.clear();
  const std::string next = chunk("bc");
  EXPECT_EQ(r.rewrite_known_event(next + chunk("de") + "data: [DO", out), next.size());
  EXPECT_EQ(out, chunk("bc", "qwen"));
  out.clear();
  EXPECT_EQ(r.rewrite_known_event(next.substr(0, next.size() - 1), out), 0u) << "cut short";
  EXPECT_EQ(r.rewrite_known_event(chunk("b\nc"), out), 0u) << "a raw line break";
  EXPECT_EQ(r.rewrite_known_event(chunk("b", "/m.gguf", "2"), out), 0u) << "another tail";
  EXPECT_EQ(r.rewrite_known_event("data: [DONE]\n\n", out), 0u);
  EXPECT_TRUE(out.empty());
}

// The change (the model renamed) may come before the text, as vLLM writes
// its chunks, or after it, as llama-server does.
TEST(DeltaTemplate, KeepsAChangeBeforeOrAfterTheText) {
  const std::string before =
      "data: {\"model\":\"/m\",\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
  ResponseRewriter r("qwen", false);
  std::string out;
  r.rewrite_event(before, out);
  out.clear();
  const std::string next =
      "data: {\"model\":\"/m\",\"choices\":[{\"delta\":{\"content\":\"bc\"}}]}\n\n";
  EXPECT_TRUE(r.rewrite_event(next, out));
  EXPECT_EQ(out, "data: {\"model\":\"qwen\",\"choices\":[{\"delta\":{\"content\":\"bc\"}}]}\n\n");
  ResponseRewriter after("qwen", false);
  out.clear();
  after.rewrite_event(chunk("a"), out);
  out.clear();
  EXPECT_TRUE(after.rewrite_event(chunk("bc"), out));
  EXPECT_EQ(out, chunk("bc", "qwen"));
}

// A usage-bearing delta (vLLM's continuous usage stats) is noted every time.
TEST(DeltaTemplate, UsageInEveryChunkIsStillCounted) {
  ResponseRewriter r("m", false);
  std::string out;
  for (int i = 1; i <= 3; ++i)
    r.rewrite_event(
        "data: {\"choices\":[{\"delta\":{\"content\":\"t\"}}],\"usage\":{\"prompt_tokens\":4,"
        "\"completion_tokens\":" +
            std::to_string(i) + "}}\n\n",
        out);
  ASSERT_TRUE(r.usage());
  EXPECT_EQ(r.usage()->completion_tokens, 3);
}

}  // namespace
}  // namespace switchyard::openai
