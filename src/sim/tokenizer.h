// The simulator's tokenizer: deterministic, word-level, over a fixed
// vocabulary, with byte fallback so every text round-trips exactly. Token
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
  // Ids from first_word_token() on are words with a leading space: what the
  // simulated model generates, and what a benchmark may send as random ids.
  Token first_word_token() const { return first_word_; }
  bool is_special(Token token) const { return token >= 0 && token < kSpecialCount; }

  static constexpr Token kBos = 1;
  static constexpr Token kEos = 2;

 private:
  static constexpr Token kSpecialCount = 5;  // <unk> <s> </s> <|im_start|> <|im_end|>
  static constexpr Token kFirstByte = kSpecialCount;

  Token lookup(std::string_view piece) const;

  std::vector<std::string> pieces_;
  std::unordered_map<std::string, Token> word_ids_;  // pieces_ from first_word_ on
  Token first_word_ = 0;
};

}  // namespace switchyard::sim
