// The long-context retrieval check, in the manner of RULER's multi-key needle
// task: a haystack of a fixed filler paragraph repeated to the context size,
// needles "The special magic number for <key> is <7 digits>." inserted at
// sentence boundaries at a depth, and a question asking for all of them.
#pragma once

#include <cstddef>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "bench/prompt_builder.h"
#include "common/result.h"

namespace switchyard::bench {

struct Needle {
  std::string key;    // e.g. "quiet-harbor"
  std::string value;  // seven digits, no leading zero
};

// `count` (at most 64) needles with distinct keys and distinct values.
std::vector<Needle> make_needles(std::mt19937_64& rng, int count);

// "The special magic number for <key> is <value>."
std::string needle_sentence(const Needle& needle);

// `sentences` sentences of the fixed filler paragraph, cycled, joined by spaces.
std::string filler_text(long sentences);

// Where sentences start in `text`: 0, every offset just after ". ", and
// text.size() (the end, for a needle placed last). Ascending.
std::vector<std::size_t> sentence_boundaries(std::string_view text);

// The index into `boundaries` (of a text of `text_size` bytes) nearest to
// `depth_percent` of the text: 0 the start, 100 the end.
std::size_t boundary_index_at(const std::vector<std::size_t>& boundaries, std::size_t text_size,
                              double depth_percent);

struct Placement {
  std::string text;                  // the haystack with the needles in it
  std::vector<std::size_t> offsets;  // where each needle's sentence starts in `text`
};

// Inserts the needles at successive sentence boundaries of `haystack`, the
// first at the boundary nearest `depth_percent` (moved back when too few
// boundaries follow), so each needle is its own sentence with filler
// sentences between them.
Placement insert_needles(std::string_view haystack, const std::vector<Needle>& needles,
                         double depth_percent);

// The question that ends the prompt: asks for every needle's value.
std::string needle_question(const std::vector<Needle>& needles);

struct NeedlePrompt {
  std::string text;  // the whole user message
  long tokens = 0;   // as `count` counted `text`
  long sentences = 0;
  std::vector<std::size_t> offsets;  // needle offsets in `text`
  double depth_percent = 0;
  int count_calls = 0;
};

// The user message: a preamble, the haystack with the needles at
// `depth_percent`, and the question; as many filler sentences as keep it at
// or under `target` tokens as `count` says (within about one sentence). Fails
// when even an empty haystack is over `target`, or on `count`'s errors.
Result<NeedlePrompt> sized_needle_prompt(long target, const std::vector<Needle>& needles,
                                         double depth_percent, const CountTokens& count);

}  // namespace switchyard::bench
