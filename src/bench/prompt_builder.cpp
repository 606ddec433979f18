#include "bench/prompt_builder.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

namespace switchyard::bench {

namespace {

// Common English words: one token each (with their leading space) in the
// usual BPE vocabularies, so corrections converge in a few steps.
constexpr std::string_view kWords[] = {
    "the",    "of",    "and",    "to",     "in",     "is",     "it",    "you",    "that",
    "he",     "was",   "for",    "on",     "are",    "with",   "as",    "his",    "they",
    "be",     "at",    "one",    "have",   "this",   "from",   "or",    "had",    "by",
    "not",    "word",  "but",    "what",   "some",   "we",     "can",   "out",    "other",
    "were",   "all",   "there",  "when",   "up",     "use",    "your",  "how",    "said",
    "an",     "each",  "she",    "which",  "do",     "their",  "time",  "if",     "will",
    "way",    "about", "many",   "then",   "them",   "write",  "would", "like",   "so",
    "these",  "her",   "long",   "make",   "thing",  "see",    "him",   "two",    "has",
    "look",   "more",  "day",    "could",  "go",     "come",   "did",   "number", "sound",
    "no",     "most",  "people", "my",     "over",   "know",   "water", "than",   "call",
    "first",  "who",   "may",    "down",   "side",   "been",   "now",   "find",   "any",
    "new",    "work",  "part",   "take",   "get",    "place",  "made",  "live",   "where",
    "after",  "back",  "little", "only",   "round",  "man",    "year",  "came",   "show",
    "every",  "good",  "me",     "give",   "our",    "under",  "name",  "very",   "through",
    "just",   "form",  "great",  "think",  "say",    "help",   "low",   "line",   "turn",
    "cause",  "much",  "mean",   "before", "move",   "right",  "boy",   "old",    "too",
    "same",   "tell",  "does",   "set",    "three",  "want",   "air",   "well",   "also",
    "play",   "small", "end",    "put",    "home",   "read",   "hand",  "port",   "large",
    "add",    "even",  "land",   "here",   "must",   "big",    "high",  "such",   "follow",
    "act",    "why",   "ask",    "men",    "change", "went",   "light", "kind",   "off",
    "need",   "house", "try",    "us",     "again",  "animal", "point", "mother", "world",
    "near",   "build", "self",   "earth",  "father", "head",   "stand", "own",    "page",
    "should", "found", "answer", "school", "grow",   "study",  "still", "learn",  "plant",
    "cover",  "food",  "sun",    "four",   "state",  "keep",   "eye",   "never",  "last",
    "let",    "city",  "tree",   "cross",  "farm",   "hard",   "start", "might",  "story",
};
constexpr std::size_t kWordCount = sizeof(kWords) / sizeof(kWords[0]);

// Corrections before giving up with a residual: each one is a /tokenize call.
constexpr int kMaxCountCalls = 24;

std::string join(const std::vector<std::string_view>& words) {
  std::string text;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) text += ' ';
    text += words[i];
  }
  return text;
}

std::string_view random_word(std::mt19937_64& rng) {
  std::uniform_int_distribution<std::size_t> pick(0, kWordCount - 1);
  return kWords[pick(rng)];
}

}  // namespace

std::mt19937_64 session_rng(std::uint64_t seed, int session, RngPurpose purpose) {
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                    static_cast<std::uint32_t>(session), static_cast<std::uint32_t>(purpose)};
  return std::mt19937_64(seq);
}

TokenIdRange usable_token_ids(long n_vocab) {
  TokenIdRange range{10, n_vocab};
  if (n_vocab > 4096) range.end = n_vocab - 512;
  return range;
}

std::vector<long> random_token_prompt(std::mt19937_64& rng, long length, TokenIdRange range) {
  std::uniform_int_distribution<long> pick(range.first, range.end - 1);
  std::vector<long> ids(static_cast<std::size_t>(std::max(0L, length)));
  for (auto& id : ids) id = pick(rng);
  return ids;
}

std::string random_words(std::mt19937_64& rng, long words) {
  std::vector<std::string_view> picked;
  for (long i = 0; i < words; ++i) picked.push_back(random_word(rng));
  return join(picked);
}

Result<TextPrompt> exact_text_prompt(std::mt19937_64& rng, long target, const CountTokens& count) {
  std::vector<std::string_view> words;
  for (long i = 0; i < std::max(1L, target); ++i) words.push_back(random_word(rng));
  TextPrompt best;
  long best_diff = -1;
  for (int call = 1; call <= kMaxCountCalls; ++call) {
    std::string text = join(words);
    auto n = count(text);
    if (!n) return n.error();
    const long diff = *n - target;
    if (best_diff < 0 || std::labs(diff) < best_diff) {
      best_diff = std::labs(diff);
      best = TextPrompt{std::move(text), *n, call};
    }
    best.count_calls = call;
    if (diff == 0) break;
    // Tokens per word so far, to size the correction; near the target one
    // word at a time, and a swapped last word breaks an oscillation between
    // target - 1 and target + 1 (a two-token word at the end).
    const double per_word = static_cast<double>(*n) / static_cast<double>(words.size());
    const auto step = std::max(
        1L, static_cast<long>(static_cast<double>(std::labs(diff)) / std::max(1.0, per_word)));
    if (diff > 0) {
      const auto remove = std::min<std::size_t>(static_cast<std::size_t>(step), words.size() - 1);
      if (remove == 0) break;  // one word is already too long: cannot do better
      words.resize(words.size() - remove);
    } else {
      if (call > kMaxCountCalls / 2 && !words.empty()) words.back() = random_word(rng);
      for (long i = 0; i < step; ++i) words.push_back(random_word(rng));
    }
  }
  return best;
}

}  // namespace switchyard::bench
