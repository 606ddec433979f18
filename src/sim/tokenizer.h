// The simulator's tokenizer: deterministic, word-level, over a fixed
// vocabulary, with byte fallback so every text round-trips exactly. Like a
// real engine's (llama.cpp's stories260K splits most words), it does not
// count one token per word: its words of six letters or more are two tokens
// (" peo" "ple"), so a client that sizes prompts by words is off. Token
// counts of a text are the same wherever they are computed (prompt, output,
// /tokenize), which is what makes the simulator's usage numbers checkable.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace switchyard::sim {

using Token = std::int32_t;

class Tokenizer {
 public:
  Tokenizer();

  std::vector<Token> tokenize(std::string_view text) const;
  // Unknown ids are skipped: llama-server does the same for out-of-range ids.
  std::string detokenize(const std::vector<Token>& tokens) const;
  std::string_view piece(Token token) const;

  std::size_t vocab_size() const { return pieces_.size(); }
  // Ids [first_word_token(), + spaced_words()) are whole words with a
  // leading space: what the simulated model generates.
  Token first_word_token() const { return first_word_; }
  int spaced_words() const { return spaced_words_; }
  bool is_special(Token token) const { return token >= 0 && token < kSpecialCount; }

  static constexpr Token kBos = 1;
  static constexpr Token kEos = 2;

 private:
  static constexpr Token kSpecialCount = 5;  // <unk> <s> </s> <|im_start|> <|im_end|>
  static constexpr Token kFirstByte = kSpecialCount;

  Token lookup(std::string_view piece) const;
  // A word of the vocabulary split in two pieces (with its leading space,
  // if any): appends its ids and says so.
  bool split_word(std::string_view word, std::vector<Token>& out) const;

  std::vector<std::string> pieces_;
  std::unordered_map<std::string, Token> word_ids_;  // pieces_ from first_word_ on
  Token first_word_ = 0;
  int spaced_words_ = 0;
  std::unordered_map<std::string, std::pair<Token, Token>> split_;  // " people" → " peo" "ple"
};

}  // namespace switchyard::sim
