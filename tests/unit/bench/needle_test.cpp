#include "bench/needle.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "bench/needle_run.h"
#include "bench/needle_scorer.h"

namespace switchyard::bench {
namespace {

const std::vector<std::string> kValues{"4314971", "4262150", "8369623"};

TEST(NeedleScorer, AllFound) {
  const auto s = score_answer(
      "velvet-river: 4314971, brisk-marble: 4262150, bright-pepper: 8369623.", kValues);
  EXPECT_EQ(s.hits, 3);
  EXPECT_DOUBLE_EQ(s.score, 1.0);
  EXPECT_EQ(s.found, (std::vector<bool>{true, true, true}));
}

TEST(NeedleScorer, SomeFound) {
  const auto s = score_answer(
      "The special magic number for velvet-river is 4314971. I could not find the others.",
      kValues);
  EXPECT_EQ(s.hits, 1);
  EXPECT_NEAR(s.score, 1.0 / 3, 1e-12);
  EXPECT_EQ(s.found, (std::vector<bool>{true, false, false}));
}

TEST(NeedleScorer, DigitsInsideOtherNumbersDoNotCount) {
  // 4314971 inside a longer number, 4262150 with digits before it,
  // 8369623 as the integer part of a decimal: none is the value.
  const auto s = score_answer("Numbers: 43149715, 14262150 and 8369623.5 and 08369623", kValues);
  EXPECT_EQ(s.hits, 0);
  EXPECT_DOUBLE_EQ(s.score, 0.0);
}

TEST(NeedleScorer, OrderDoesNotMatterAndRepeatsCountOnce) {
  const auto s = score_answer("8369623 8369623 4262150 4314971", kValues);
  EXPECT_EQ(s.hits, 3);
  const auto twice = score_answer("4314971 and again 4314971", kValues);
  EXPECT_EQ(twice.hits, 1);
}

TEST(NeedleScorer, ThousandsSeparatorsAndPunctuation) {
  const auto s = score_answer("(4,314,971), \"4262150\"; 8369623!", kValues);
  EXPECT_EQ(s.hits, 3);
  // A comma between two numbers is a list, not a separator.
  EXPECT_EQ(numbers_in("1, 234 and 12,34"), (std::vector<std::string>{"1", "234", "12", "34"}));
  EXPECT_EQ(numbers_in("no digits"), std::vector<std::string>{});
}

TEST(NeedleScorer, NoValues) {
  const auto s = score_answer("4314971", {});
  EXPECT_EQ(s.hits, 0);
  EXPECT_DOUBLE_EQ(s.score, 0.0);
}

TEST(Needle, NeedlesHaveDistinctKeysAndSevenDigitValues) {
  std::mt19937_64 rng(7);
  const auto needles = make_needles(rng, 20);
  ASSERT_EQ(needles.size(), 20u);
  std::set<std::string> keys, values;
  for (const auto& n : needles) {
    keys.insert(n.key);
    values.insert(n.value);
    EXPECT_EQ(n.value.size(), 7u);
    EXPECT_NE(n.value.front(), '0');
    EXPECT_EQ(needle_sentence(n), "The special magic number for " + n.key + " is " + n.value + ".");
  }
  EXPECT_EQ(keys.size(), 20u);
  EXPECT_EQ(values.size(), 20u);
}

TEST(Needle, SentenceBoundaries) {
  const std::string text = "The grass is green. The sky is blue. Here we go.";
  EXPECT_EQ(sentence_boundaries(text), (std::vector<std::size_t>{0, 20, 37, text.size()}));
}

TEST(Needle, DepthMapsToTheNearestSentenceBoundary) {
  const std::string text = filler_text(100);
  const auto b = sentence_boundaries(text);
  EXPECT_EQ(b.size(), 101u);  // 0, 99 sentence starts, the end
  EXPECT_EQ(boundary_index_at(b, text.size(), 0), 0u);
  EXPECT_EQ(boundary_index_at(b, text.size(), 100), b.size() - 1);
  for (double depth : {10.0, 33.0, 50.0, 90.0}) {
    const std::size_t i = boundary_index_at(b, text.size(), depth);
    const std::size_t at = b[i];
    // A sentence starts there.
    ASSERT_GE(at, 2u);
    EXPECT_EQ(text.substr(at - 2, 2), ". ");
    // And no other boundary is nearer the wanted offset.
    const double want = depth / 100 * static_cast<double>(text.size());
    for (std::size_t other : b)
      EXPECT_LE(std::abs(static_cast<double>(at) - want),
                std::abs(static_cast<double>(other) - want) + 1e-9);
  }
}

TEST(Needle, InsertsNeedlesAtSuccessiveBoundariesFromTheDepth) {
  const std::string haystack = filler_text(200);
  std::mt19937_64 rng(1);
  const auto needles = make_needles(rng, 3);
  for (double depth : {0.0, 10.0, 50.0, 90.0, 100.0}) {
    const auto p = insert_needles(haystack, needles, depth);
    ASSERT_EQ(p.offsets.size(), 3u);
    std::size_t length = haystack.size();
    for (std::size_t i = 0; i < 3; ++i) {
      const auto sentence = needle_sentence(needles[i]);
      length += sentence.size() + 1;
      EXPECT_EQ(p.text.substr(p.offsets[i], sentence.size()), sentence) << depth;
      // Each needle is its own sentence: at the start or after ". ".
      if (p.offsets[i] > 0) {
        EXPECT_EQ(p.text.substr(p.offsets[i] - 2, 2), ". ") << depth;
      }
      if (i > 0) {
        EXPECT_GT(p.offsets[i], p.offsets[i - 1] + sentence.size()) << depth;
      }
    }
    EXPECT_EQ(p.text.size(), length);
    // The first needle sits where the depth falls in the haystack, within a
    // sentence (at 100% the needles move back so that each gets a boundary).
    const double at =
        100.0 * static_cast<double>(p.offsets[0]) / static_cast<double>(haystack.size());
    EXPECT_NEAR(at, depth, depth == 100.0 ? 2.0 : 0.5) << depth;
    // Removing the needles gives the haystack back.
    std::string back = p.text;
    for (std::size_t i = 3; i-- > 0;) {
      const std::size_t n = needle_sentence(needles[i]).size();
      if (p.offsets[i] + n == back.size()) {
        back.erase(p.offsets[i] - 1, n + 1);  // last: a space before it
      } else {
        back.erase(p.offsets[i], n + 1);  // a space after it
      }
    }
    EXPECT_EQ(back, haystack) << depth;
  }
}

// A fake tokenizer: one token per word.
Result<long> count_words(const std::string& text) {
  std::istringstream in(text);
  long n = 0;
  for (std::string w; in >> w;) ++n;
  return n;
}

TEST(Needle, PromptIsSizedJustUnderTheTarget) {
  std::mt19937_64 rng(2);
  const auto needles = make_needles(rng, 3);
  for (long target : {300L, 4096L, 32768L}) {
    auto p = sized_needle_prompt(target, needles, 50, count_words);
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_LE(p->tokens, target);
    EXPECT_GT(p->tokens, target - 10) << target;  // within about one sentence
    EXPECT_EQ(*count_words(p->text), p->tokens);
    EXPECT_LE(p->count_calls, 12);
    ASSERT_EQ(p->offsets.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i)
      EXPECT_EQ(p->text.substr(p->offsets[i], needle_sentence(needles[i]).size()),
                needle_sentence(needles[i]));
    EXPECT_NE(p->text.find(needle_question(needles)), std::string::npos);
  }
  auto tiny = sized_needle_prompt(20, needles, 50, count_words);
  EXPECT_FALSE(tiny);
}

TEST(Needle, QuestionNamesEveryKey) {
  std::mt19937_64 rng(3);
  const auto needles = make_needles(rng, 3);
  const auto q = needle_question(needles);
  for (const auto& n : needles) EXPECT_NE(q.find(n.key), std::string::npos);
  EXPECT_EQ(q.find(needles[0].value), std::string::npos);
}

TEST(NeedleReport, GridMeansTheTrialsAndSurvivesTheJson) {
  NeedleReport r;
  r.endpoint = "http://e";
  r.model = "m";
  r.simulated = true;
  r.options.depths = {10, 90};
  r.options.label = "128K check";
  r.contexts = {4096, 131072};
  const auto cell = [](long context, double depth, double score) {
    NeedleCell c;
    c.context = context;
    c.depth = depth;
    c.score = score;
    return c;
  };
  r.cells = {cell(4096, 10, 1), cell(4096, 10, 0.5), cell(4096, 90, 1), cell(131072, 10, 0)};
  const NeedleGrid g = needle_grid(r);
  EXPECT_DOUBLE_EQ(g.scores.at({4096, 10}), 0.75);
  EXPECT_EQ(g.scores.count({131072, 90}), 0u);
  auto back = needle_grid_from_json(needle_to_json(r), "n.json");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->label, "128K check");
  EXPECT_TRUE(back->simulated);
  EXPECT_EQ(back->contexts, (std::vector<long>{4096, 131072}));
  EXPECT_EQ(back->depths, (std::vector<double>{10, 90}));
  EXPECT_EQ(back->scores, g.scores);
  EXPECT_FALSE(needle_grid_from_json("{\"kind\":\"needle\"}", "x.json"));
}

}  // namespace
}  // namespace switchyard::bench
