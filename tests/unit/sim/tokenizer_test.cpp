#include "sim/tokenizer.h"

#include <gtest/gtest.h>

namespace switchyard::sim {
namespace {

TEST(Tokenizer, WordsWithLeadingSpaceAreOneToken) {
  Tokenizer t;
  auto ids = t.tokenize("Once upon a time");
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(t.piece(ids[1]), " upon");
}

// Like llama.cpp's vocabularies, not a token per word: a word of six
// letters or more is two pieces, with or without its leading space; the
// simulated model still generates whole words only.
TEST(Tokenizer, LongWordsAreTwoTokens) {
  Tokenizer t;
  const auto ids = t.tokenize("people said the number");
  ASSERT_EQ(ids.size(), 6u);
  EXPECT_EQ(t.piece(ids[0]), "peo");
  EXPECT_EQ(t.piece(ids[1]), "ple");
  EXPECT_EQ(t.piece(ids[2]), " said");
  EXPECT_EQ(t.piece(ids[4]), " num");
  EXPECT_EQ(t.piece(ids[5]), "ber");
  EXPECT_EQ(t.detokenize(ids), "people said the number");
  for (Token id = t.first_word_token(); id < t.first_word_token() + t.spaced_words(); ++id)
    EXPECT_LT(t.piece(id).size(), 7u) << t.piece(id);  // " " and up to five letters
}

TEST(Tokenizer, EveryTextRoundTrips) {
  Tokenizer t;
  for (const std::string& text :
       std::vector<std::string>{"Hello, world!\n", "<|im_start|>user\nHi<|im_end|>\n",
                                "zqxj 123 ünïcødé", std::string("\0\x01\xff", 3), ""}) {
    EXPECT_EQ(t.detokenize(t.tokenize(text)), text);
  }
}

TEST(Tokenizer, SpecialMarkersAreSingleTokens) {
  Tokenizer t;
  auto ids = t.tokenize("<|im_start|>assistant\n");
  EXPECT_TRUE(t.is_special(ids.front()));
  EXPECT_EQ(t.piece(ids.front()), "<|im_start|>");
}

TEST(Tokenizer, GeneratedWordsRetokenizeToTheSameCount) {
  // The simulator generates word tokens; their text must tokenize back to
  // exactly as many tokens, or usage and /tokenize would disagree.
  Tokenizer t;
  std::vector<Token> generated;
  for (Token id = t.first_word_token(); id < t.first_word_token() + 200; ++id)
    generated.push_back(id);
  EXPECT_EQ(t.tokenize(t.detokenize(generated)), generated);
}

TEST(Tokenizer, UnknownIdsDetokenizeToNothing) {
  Tokenizer t;
  EXPECT_EQ(t.detokenize({-1, static_cast<Token>(t.vocab_size()) + 5}), "");
}

}  // namespace
}  // namespace switchyard::sim
