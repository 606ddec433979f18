// Prompts of an exact token length, from random vocabulary: token ids where
// the API takes them, random words corrected against the engine's own
// tokenizer where it takes only text (chat). Random vocabulary is the worst
// case for speculative decoding and defeats prefix caches between requests.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/result.h"

namespace switchyard::bench {

// What a session's generator is for: each purpose draws its own sequence.
enum class RngPurpose : std::uint32_t { agent_sizes = 1, agent_text = 2, trace_text = 3 };

// A generator for one session, the same for the same (seed, session,
// purpose) on every run and independent across them, so that a rerun or a
// replay rebuilds the same prompts.
std::mt19937_64 session_rng(std::uint64_t seed, int session, RngPurpose purpose);

// The ids a random prompt draws from: [first, end).
struct TokenIdRange {
  long first = 0;
  long end = 0;
};

// The rule for "not a special token" without knowing the vocabulary: skip
// the lowest 10 ids (llama-style <unk> <s> </s> and friends, and
// the sim's five) and, for vocabularies over 4096, the top 512 ids (Llama 3
// reserves its last 256, Qwen2/3 its last 293 for control tokens).
// Precondition: n_vocab > 10.
TokenIdRange usable_token_ids(long n_vocab);

// `length` ids drawn uniformly from `range`.
std::vector<long> random_token_prompt(std::mt19937_64& rng, long length, TokenIdRange range);

// How many tokens the engine counts in a text (e.g. a /tokenize call).
using CountTokens = std::function<Result<long>(const std::string& text)>;

struct TextPrompt {
  std::string text;
  long tokens = 0;  // as `count` last counted `text`
  int count_calls = 0;
};

// Random words whose token count, as `count` says, is `target`: scaled to
// within a few tokens, then adjusted a word at a time (a word is one to
// several tokens; llama.cpp's small vocabularies split most). When 64 calls
// do not get there, `tokens` differs (the caller fails the step). Errors are
// `count`'s.
Result<TextPrompt> exact_text_prompt(std::mt19937_64& rng, long target, const CountTokens& count);

// Random words, without any tokenizer: about one token per word on
// BPE vocabularies. For endpoints without /tokenize.
std::string random_words(std::mt19937_64& rng, long words);

}  // namespace switchyard::bench
