#include "bench/needle.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace switchyard::bench {

namespace {

// The classic needle-in-a-haystack noise (RULER's "noise" haystack): short
// sentences that say nothing about numbers.
constexpr std::string_view kFiller[] = {
    "The grass is green.", "The sky is blue.",      "The sun is yellow.",
    "Here we go.",         "There and back again.",
};
constexpr std::size_t kFillerCount = sizeof(kFiller) / sizeof(kFiller[0]);

constexpr std::string_view kAdjectives[] = {
    "quiet",  "amber", "brisk", "hollow", "silver", "gentle", "rapid",  "frozen",
    "velvet", "crisp", "lucky", "dusty",  "bright", "humble", "wicked", "golden",
};
constexpr std::string_view kNouns[] = {
    "harbor", "lantern", "meadow", "falcon", "orchard", "canyon", "pepper", "violin",
    "comet",  "garden",  "anchor", "willow", "thunder", "marble", "pilot",  "river",
};

constexpr std::string_view kPreamble =
    "Some special magic numbers are hidden within the following text. Make sure to memorize "
    "them. I will quiz you about the numbers afterwards.\n";

constexpr int kMaxCountCalls = 10;

std::string with_needles(const Placement& p, std::string_view question) {
  return std::string(kPreamble) + p.text + "\n" + std::string(question);
}

}  // namespace

std::vector<Needle> make_needles(std::mt19937_64& rng, int count) {
  std::uniform_int_distribution<std::size_t> adjective(0, std::size(kAdjectives) - 1);
  std::uniform_int_distribution<std::size_t> noun(0, std::size(kNouns) - 1);
  std::uniform_int_distribution<long> number(1'000'000, 9'999'999);
  std::set<std::string> keys, values;
  std::vector<Needle> needles;
  while (static_cast<int>(needles.size()) < count) {
    Needle n;
    n.key = fmt::format("{}-{}", kAdjectives[adjective(rng)], kNouns[noun(rng)]);
    n.value = std::to_string(number(rng));
    if (!keys.insert(n.key).second) continue;
    if (!values.insert(n.value).second) continue;
    needles.push_back(std::move(n));
  }
  return needles;
}

std::string needle_sentence(const Needle& needle) {
  return fmt::format("The special magic number for {} is {}.", needle.key, needle.value);
}

std::string filler_text(long sentences) {
  std::string text;
  for (long i = 0; i < sentences; ++i) {
    if (i > 0) text += ' ';
    text += kFiller[static_cast<std::size_t>(i) % kFillerCount];
  }
  return text;
}

std::vector<std::size_t> sentence_boundaries(std::string_view text) {
  std::vector<std::size_t> at{0};
  for (std::size_t i = 2; i < text.size(); ++i)
    if (text[i - 2] == '.' && text[i - 1] == ' ') at.push_back(i);
  if (text.size() > 0) at.push_back(text.size());
  return at;
}

std::size_t boundary_index_at(const std::vector<std::size_t>& boundaries, std::size_t text_size,
                              double depth_percent) {
  const double want =
      std::clamp(depth_percent, 0.0, 100.0) / 100.0 * static_cast<double>(text_size);
  std::size_t best = 0;
  for (std::size_t i = 1; i < boundaries.size(); ++i)
    if (std::abs(static_cast<double>(boundaries[i]) - want) <
        std::abs(static_cast<double>(boundaries[best]) - want))
      best = i;
  return best;
}

Placement insert_needles(std::string_view haystack, const std::vector<Needle>& needles,
                         double depth_percent) {
  const auto boundaries = sentence_boundaries(haystack);
  std::size_t first = boundary_index_at(boundaries, haystack.size(), depth_percent);
  // Each needle at its own boundary: move back when the text ends first.
  if (!needles.empty() && first + needles.size() > boundaries.size())
    first = boundaries.size() >= needles.size() ? boundaries.size() - needles.size() : 0;
  Placement p;
  std::size_t copied = 0;
  for (std::size_t i = 0; i < needles.size(); ++i) {
    const std::size_t b = boundaries[std::min(first + i, boundaries.size() - 1)];
    p.text.append(haystack.substr(copied, b - copied));
    copied = b;
    // Between two sentences "X. " + "N. " keeps the spacing; after a
    // sentence without a following space (the end) it needs one.
    if (!p.text.empty() && p.text.back() != ' ') p.text += ' ';
    p.offsets.push_back(p.text.size());
    p.text += needle_sentence(needles[i]);
    if (b < haystack.size()) p.text += ' ';
  }
  p.text.append(haystack.substr(copied));
  return p;
}

std::string needle_question(const std::vector<Needle>& needles) {
  std::string keys;
  for (std::size_t i = 0; i < needles.size(); ++i) {
    if (i > 0) keys += i + 1 == needles.size() ? (needles.size() > 2 ? ", and " : " and ") : ", ";
    keys += needles[i].key;
  }
  return fmt::format(
      "What are all the special magic numbers for {} mentioned in the provided text? Answer with "
      "each key and its number.",
      keys);
}

Result<NeedlePrompt> sized_needle_prompt(long target, const std::vector<Needle>& needles,
                                         double depth_percent, const CountTokens& count) {
  const std::string question = needle_question(needles);
  const auto build = [&](long sentences) {
    auto placed = insert_needles(filler_text(sentences), needles, depth_percent);
    NeedlePrompt p;
    p.sentences = sentences;
    p.depth_percent = depth_percent;
    p.text = with_needles(placed, question);
    const std::size_t shift = kPreamble.size();
    for (auto o : placed.offsets) p.offsets.push_back(o + shift);
    return p;
  };
  int calls = 0;
  // Tokens per filler sentence, and what the rest costs.
  constexpr long kSample = 50;
  auto sample = count(filler_text(kSample));
  ++calls;
  if (!sample) return sample.error();
  const double per_sentence = std::max(1.0, static_cast<double>(*sample) / kSample);
  NeedlePrompt bare = build(0);
  auto fixed = count(bare.text);
  ++calls;
  if (!fixed) return fixed.error();
  if (*fixed > target)
    return Error{
        fmt::format("a context of {} tokens cannot hold the question and {} needles ({} tokens)",
                    target, needles.size(), *fixed)};
  bare.tokens = *fixed;
  NeedlePrompt best = bare;
  long n = static_cast<long>(static_cast<double>(target - *fixed) / per_sentence);
  for (int i = 0; i < kMaxCountCalls && n > 0; ++i) {
    NeedlePrompt p = build(n);
    auto c = count(p.text);
    ++calls;
    if (!c) return c.error();
    p.tokens = *c;
    const long diff = target - *c;
    if (diff >= 0 && p.tokens > best.tokens) best = std::move(p);
    if (diff >= 0 && static_cast<double>(diff) < per_sentence * 1.5) break;
    long step = static_cast<long>(std::floor(static_cast<double>(diff) / per_sentence));
    if (step == 0) step = diff < 0 ? -1 : 1;
    n = std::max(0L, n + step);
  }
  best.count_calls = calls;
  return best;
}

}  // namespace switchyard::bench
