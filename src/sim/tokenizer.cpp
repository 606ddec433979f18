#include "sim/tokenizer.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace switchyard::sim {

namespace {

// A small English vocabulary, enough for readable output and realistic
// prompts. Each word exists with and without a leading space.
constexpr std::string_view kWords[] = {
    "the",      "of",       "and",      "to",      "a",        "in",       "is",      "it",
    "you",      "that",     "he",       "was",     "for",      "on",       "are",     "with",
    "as",       "his",      "they",     "be",      "at",       "one",      "have",    "this",
    "from",     "or",       "had",      "by",      "not",      "word",     "but",     "what",
    "some",     "we",       "can",      "out",     "other",    "were",     "all",     "there",
    "when",     "up",       "use",      "your",    "how",      "said",     "an",      "each",
    "she",      "which",    "do",       "their",   "time",     "if",       "will",    "way",
    "about",    "many",     "then",     "them",    "write",    "would",    "like",    "so",
    "these",    "her",      "long",     "make",    "thing",    "see",      "him",     "two",
    "has",      "look",     "more",     "day",     "could",    "go",       "come",    "did",
    "number",   "sound",    "no",       "most",    "people",   "my",       "over",    "know",
    "water",    "than",     "call",     "first",   "who",      "may",      "down",    "side",
    "been",     "now",      "find",     "any",     "new",      "work",     "part",    "take",
    "get",      "place",    "made",     "live",    "where",    "after",    "back",    "little",
    "only",     "round",    "man",      "year",    "came",     "show",     "every",   "good",
    "me",       "give",     "our",      "under",   "name",     "very",     "through", "just",
    "form",     "sentence", "great",    "think",   "say",      "help",     "low",     "line",
    "differ",   "turn",     "cause",    "much",    "mean",     "before",   "move",    "right",
    "boy",      "old",      "too",      "same",    "tell",     "does",     "set",     "three",
    "want",     "air",      "well",     "also",    "play",     "small",    "end",     "put",
    "home",     "read",     "hand",     "port",    "large",    "spell",    "add",     "even",
    "land",     "here",     "must",     "big",     "high",     "such",     "follow",  "act",
    "why",      "ask",      "men",      "change",  "went",     "light",    "kind",    "off",
    "need",     "house",    "picture",  "try",     "us",       "again",    "animal",  "point",
    "mother",   "world",    "near",     "build",   "self",     "earth",    "father",  "head",
    "stand",    "own",      "page",     "should",  "country",  "found",    "answer",  "school",
    "grow",     "study",    "still",    "learn",   "plant",    "cover",    "food",    "sun",
    "four",     "between",  "state",    "keep",    "eye",      "never",    "last",    "let",
    "thought",  "city",     "tree",     "cross",   "farm",     "hard",     "start",   "might",
    "story",    "saw",      "far",      "sea",     "draw",     "left",     "late",    "run",
    "while",    "press",    "close",    "night",   "real",     "life",     "few",     "north",
    "open",     "seem",     "together", "next",    "white",    "children", "begin",   "got",
    "walk",     "example",  "ease",     "paper",   "group",    "always",   "music",   "those",
    "both",     "mark",     "often",    "letter",  "until",    "mile",     "river",   "car",
    "feet",     "care",     "second",   "book",    "carry",    "took",     "science", "eat",
    "room",     "friend",   "began",    "idea",    "fish",     "mountain", "stop",    "once",
    "base",     "hear",     "horse",    "cut",     "sure",     "watch",    "color",   "face",
    "wood",     "main",     "enough",   "plain",   "girl",     "usual",    "young",   "ready",
    "above",    "ever",     "red",      "list",    "though",   "feel",     "talk",    "bird",
    "soon",     "body",     "dog",      "family",  "direct",   "pose",     "leave",   "song",
    "measure",  "door",     "product",  "black",   "short",    "numeral",  "class",   "wind",
    "question", "happen",   "complete", "ship",    "area",     "half",     "rock",    "order",
    "fire",     "south",    "problem",  "piece",   "told",     "knew",     "pass",    "since",
    "top",      "whole",    "king",     "space",   "heard",    "best",     "hour",    "better",
    "true",     "during",   "hundred",  "five",    "remember", "step",     "early",   "hold",
    "west",     "ground",   "interest", "reach",   "fast",     "verb",     "sing",    "listen",
    "six",      "table",    "travel",   "less",    "morning",  "ten",      "simple",  "several",
    "vowel",    "toward",   "war",      "lay",     "against",  "pattern",  "slow",    "center",
    "love",     "person",   "money",    "serve",   "appear",   "road",     "map",     "rain",
    "rule",     "govern",   "pull",     "cold",    "notice",   "voice",    "unit",    "power",
    "town",     "fine",     "certain",  "fly",     "fall",     "lead",     "cry",     "dark",
    "machine",  "note",     "wait",     "plan",    "figure",   "star",     "box",     "noun",
    "field",    "rest",     "correct",  "able",    "pound",    "done",     "beauty",  "drive",
    "stood",    "contain",  "front",    "teach",   "week",     "final",    "gave",    "green",
    "oh",       "quick",    "develop",  "ocean",   "warm",     "free",     "minute",  "strong",
    "special",  "mind",     "behind",   "clear",   "tail",     "produce",  "fact",    "street",
    "inch",     "multiply", "nothing",  "course",  "stay",     "wheel",    "full",    "force",
    "blue",     "object",   "decide",   "surface", "deep",     "moon",     "island",  "foot",
    "system",   "busy",     "test",     "record",  "boat",     "common",   "gold",    "possible",
    "plane",    "stead",    "dry",      "wonder",  "laugh",    "thousand", "ago",     "ran",
    "check",    "game",     "shape",    "equate",  "hot",      "miss",     "brought", "heat",
    "snow",     "tire",     "bring",    "yes",     "distant",  "fill",     "east",    "paint",
    "language", "among",    "Once",     "upon",    "Timmy",    "The",      "He",      "She",
    "It",       "They",     "One",      "What",    "How",      "Why",      "special", "magic",
};

// Words this long are two tokens.
constexpr std::size_t kSplitFrom = 6;

}  // namespace

Tokenizer::Tokenizer() {
  pieces_ = {"<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"};
  for (int b = 0; b < 256; ++b) pieces_.push_back(std::string(1, static_cast<char>(b)));
  // Newline and punctuation as their own tokens come from the byte range.
  first_word_ = static_cast<Token>(pieces_.size());
  std::vector<std::string> words, long_words;
  for (auto w : kWords) {
    auto& list = w.size() >= kSplitFrom ? long_words : words;
    if (std::find(list.begin(), list.end(), w) == list.end()) list.emplace_back(w);
  }
  spaced_words_ = static_cast<int>(words.size());
  for (const auto& w : words) pieces_.push_back(" " + w);
  for (const auto& w : words) pieces_.push_back(w);
  for (Token i = first_word_; i < static_cast<Token>(pieces_.size()); ++i)
    word_ids_.emplace(pieces_[i], i);
  // Long words: a head (with and without the space) and a tail, each a
  // piece of its own (shared when it is already one).
  const auto piece_id = [this](const std::string& piece) {
    auto [it, fresh] = word_ids_.try_emplace(piece, static_cast<Token>(pieces_.size()));
    if (fresh) pieces_.push_back(piece);
    return it->second;
  };
  for (const auto& w : long_words) {
    const std::string head = w.substr(0, w.size() / 2), tail = w.substr(w.size() / 2);
    const Token t = piece_id(tail);
    split_.emplace(" " + w, std::pair{piece_id(" " + head), t});
    split_.emplace(w, std::pair{piece_id(head), t});
  }
}

bool Tokenizer::split_word(std::string_view word, std::vector<Token>& out) const {
  auto it = split_.find(std::string(word));
  if (it == split_.end()) return false;
  out.push_back(it->second.first);
  out.push_back(it->second.second);
  return true;
}

Token Tokenizer::lookup(std::string_view piece) const {
  auto it = word_ids_.find(std::string(piece));
  return it == word_ids_.end() ? -1 : it->second;
}

std::vector<Token> Tokenizer::tokenize(std::string_view text) const {
  std::vector<Token> out;
  std::size_t i = 0;
  const auto is_letter = [&](std::size_t k) {
    return k < text.size() && std::isalpha(static_cast<unsigned char>(text[k]));
  };
  while (i < text.size()) {
    bool special = false;
    for (Token s = 3; s < kSpecialCount; ++s) {
      if (text.substr(i).starts_with(pieces_[s])) {
        out.push_back(s);
        i += pieces_[s].size();
        special = true;
        break;
      }
    }
    if (special) continue;
    // A word, with its leading space if any.
    std::size_t start = i;
    std::size_t j = (text[i] == ' ' && is_letter(i + 1)) ? i + 1 : i;
    if (is_letter(j)) {
      while (is_letter(j)) ++j;
      Token t = lookup(text.substr(start, j - start));
      if (t >= 0 || split_word(text.substr(start, j - start), out)) {
        if (t >= 0) out.push_back(t);
        i = j;
        continue;
      }
    }
    out.push_back(kFirstByte + static_cast<unsigned char>(text[i]));
    ++i;
  }
  return out;
}

std::string Tokenizer::detokenize(const std::vector<Token>& tokens) const {
  std::string out;
  for (Token t : tokens) out.append(piece(t));
  return out;
}

std::string_view Tokenizer::piece(Token token) const {
  if (token < 0 || token >= static_cast<Token>(pieces_.size())) return {};
  return pieces_[token];
}

}  // namespace switchyard::sim
