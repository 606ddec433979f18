#include "bench/prompt_builder.h"

#include <gtest/gtest.h>

#include <sstream>

namespace switchyard::bench {
namespace {

// A fake tokenizer: a word of up to 4 letters is one token, a longer one is
// two, plus `extra` tokens per text (a BOS, say). Counts its calls.
struct FakeTokenizer {
  long extra = 0;
  int calls = 0;
  Result<long> operator()(const std::string& text) {
    ++calls;
    std::istringstream in(text);
    long n = extra;
    for (std::string w; in >> w;) n += w.size() <= 4 ? 1 : 2;
    return n;
  }
};

TEST(PromptBuilder, TextPromptHitsTheExactLength) {
  for (long target : {1L, 2L, 7L, 100L, 2048L, 8192L}) {
    FakeTokenizer fake;
    std::mt19937_64 rng(target);
    auto p = exact_text_prompt(rng, target, std::ref(fake));
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_EQ(p->tokens, target) << "target " << target;
    EXPECT_EQ(*fake(p->text), target);
    EXPECT_LE(p->count_calls, 64);
  }
}

// As llama.cpp's stories260K (512 tokens) counts: most words are two or
// three tokens, and the first one of a text (no leading space) one more.
struct SmallVocabulary {
  int calls = 0;
  Result<long> operator()(const std::string& text) {
    ++calls;
    std::istringstream in(text);
    long n = 1;  // BOS
    bool first = true;
    for (std::string w; in >> w; first = false)
      n += 1 + static_cast<long>(std::hash<std::string>{}(w) % 3) + (first ? 1 : 0);
    return n;
  }
};

TEST(PromptBuilder, ExactWhereWordsAreSeveralTokens) {
  for (long target = 100; target < 160; ++target) {
    SmallVocabulary tokenizer;
    std::mt19937_64 rng(static_cast<std::uint64_t>(target));
    auto p = exact_text_prompt(rng, target, std::ref(tokenizer));
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_EQ(p->tokens, target) << "target " << target << " after " << p->count_calls;
    EXPECT_EQ(*tokenizer(p->text), target);
    EXPECT_LE(p->count_calls, 64);
  }
}

TEST(PromptBuilder, CountsWhatTheTokenizerAdds) {
  FakeTokenizer fake{.extra = 1};
  std::mt19937_64 rng(3);
  auto p = exact_text_prompt(rng, 500, std::ref(fake));
  ASSERT_TRUE(p);
  EXPECT_EQ(p->tokens, 500);
}

TEST(PromptBuilder, ReportsTheResidualWhenExactIsImpossible) {
  // Every word is three tokens: 100 cannot be reached, 99 or 102 is the best.
  const CountTokens three = [](const std::string& text) -> Result<long> {
    std::istringstream in(text);
    long n = 0;
    for (std::string w; in >> w;) n += 3;
    return n;
  };
  std::mt19937_64 rng(1);
  auto p = exact_text_prompt(rng, 100, three);
  ASSERT_TRUE(p);
  EXPECT_NE(p->tokens, 100);
  EXPECT_LE(std::labs(p->tokens - 100), 2);
}

TEST(PromptBuilder, PassesOnTokenizerErrors) {
  const CountTokens broken = [](const std::string&) -> Result<long> { return Error{"boom"}; };
  std::mt19937_64 rng(1);
  auto p = exact_text_prompt(rng, 10, broken);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().message, "boom");
}

TEST(PromptBuilder, SameSeedSamePrompt) {
  FakeTokenizer a, b;
  std::mt19937_64 r1(9), r2(9), r3(10);
  EXPECT_EQ(exact_text_prompt(r1, 64, std::ref(a))->text,
            exact_text_prompt(r2, 64, std::ref(b))->text);
  EXPECT_NE(exact_text_prompt(r1, 64, std::ref(a))->text,
            exact_text_prompt(r3, 64, std::ref(b))->text);
}

TEST(PromptBuilder, TokenIdsAvoidSpecialTokens) {
  const auto small = usable_token_ids(1283);  // the sim's vocabulary
  EXPECT_EQ(small.first, 10);
  EXPECT_EQ(small.end, 1283);
  const auto qwen = usable_token_ids(151936);  // control tokens from 151643 on
  EXPECT_EQ(qwen.first, 10);
  EXPECT_LE(qwen.end, 151643);
  const auto llama3 = usable_token_ids(128256);  // reserved from 128000 on
  EXPECT_LE(llama3.end, 128000);

  std::mt19937_64 rng(5);
  const auto ids = random_token_prompt(rng, 2048, small);
  ASSERT_EQ(ids.size(), 2048u);
  for (long id : ids) {
    EXPECT_GE(id, 10);
    EXPECT_LT(id, 1283);
  }
  std::mt19937_64 again(5);
  EXPECT_EQ(random_token_prompt(again, 2048, small), ids);
}

}  // namespace
}  // namespace switchyard::bench
