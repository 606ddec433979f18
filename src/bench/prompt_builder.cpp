#include "bench/prompt_builder.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string_view>
#include <tuple>

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

// /tokenize calls before giving up with a residual.
constexpr int kMaxCountCalls = 64;

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

namespace {

// Random words whose count is within kNear of `target`, scaling by the
// tokens per word measured so far: a few calls for any length.
Result<long> coarse_fit(std::mt19937_64& rng, long target, const CountTokens& count,
                        std::vector<std::string_view>& words, int& calls) {
  constexpr long kNear = 4;
  for (long i = 0; i < std::max(1L, target); ++i) words.push_back(random_word(rng));
  for (;;) {
    ++calls;
    auto n = count(join(words));
    if (!n) return n;
    const long diff = *n - target;
    if (std::labs(diff) <= kNear || calls >= kMaxCountCalls / 4) return n;
    const double per_word = static_cast<double>(*n) / static_cast<double>(words.size());
    const auto step = std::max(
        1L, static_cast<long>(static_cast<double>(std::labs(diff)) / std::max(1.0, per_word)));
    if (diff > 0) {
      words.resize(words.size() -
                   std::min<std::size_t>(static_cast<std::size_t>(step), words.size() - 1));
    } else {
      for (long i = 0; i < step; ++i) words.push_back(random_word(rng));
    }
  }
}

}  // namespace

Result<TextPrompt> exact_text_prompt(std::mt19937_64& rng, long target, const CountTokens& count) {
  std::vector<std::string_view> words;
  int calls = 0;
  auto counted = coarse_fit(rng, target, count, words, calls);
  if (!counted) return counted.error();
  long n = *counted;
  // Then word by word: a word more than the target drops the last word; a
  // word short appends one, chosen by the tokens each word added when it
  // was appended before (a word of one token fits any gap), and an append
  // that overshoots is taken back. Words are not a token each: on a
  // 512-token vocabulary most are two or three.
  std::map<std::string_view, long> cost;  // tokens a word added at the end
  while (n != target && calls < kMaxCountCalls) {
    std::string_view added;
    if (n > target) {
      if (words.size() == 1) break;  // one word is already too long
      words.pop_back();
    } else {
      const long gap = target - n;
      long fit = 0;
      for (const auto& [word, tokens] : cost)
        if (tokens <= gap && tokens > fit) std::tie(added, fit) = std::tie(word, tokens);
      // Nothing known fits: a word not known to be too long, to learn it.
      for (int draw = 0; fit == 0 && draw < 8 && (added.empty() || cost.contains(added)); ++draw)
        added = random_word(rng);
      words.push_back(added);
    }
    ++calls;
    auto next = count(join(words));
    if (!next) return next.error();
    if (added.empty()) {
      n = *next;
      continue;
    }
    cost[added] = std::max(1L, *next - n);
    if (*next > target) {
      words.pop_back();  // back to the text that counted n
    } else {
      n = *next;
    }
  }
  return TextPrompt{join(words), n, calls};
}

}  // namespace switchyard::bench
