#include "bench/needle_scorer.h"

#include <algorithm>
#include <cctype>

namespace switchyard::bench {

namespace {

bool digit(std::string_view text, std::size_t i) {
  return i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0;
}

}  // namespace

std::vector<std::string> numbers_in(std::string_view text) {
  std::vector<std::string> numbers;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!digit(text, i)) {
      ++i;
      continue;
    }
    std::string number;
    while (i < text.size()) {
      if (digit(text, i)) {
        number += text[i++];
        continue;
      }
      // "1,234,567": a comma followed by exactly three digits continues the
      // number; "7, 8" or "1,23" ends it.
      if (text[i] == ',' && digit(text, i + 1) && digit(text, i + 2) && digit(text, i + 3) &&
          !digit(text, i + 4)) {
        ++i;
        continue;
      }
      // "1234567.5" is a decimal, not the integer 1234567 (a full stop that
      // ends a sentence is followed by no digit).
      if (text[i] == '.' && digit(text, i + 1)) {
        number += text[i++];
        continue;
      }
      break;
    }
    numbers.push_back(std::move(number));
  }
  return numbers;
}

NeedleScore score_answer(std::string_view answer, const std::vector<std::string>& values) {
  const auto stated = numbers_in(answer);
  NeedleScore score;
  for (const auto& value : values) {
    const bool hit = std::find(stated.begin(), stated.end(), value) != stated.end();
    score.found.push_back(hit);
    score.hits += hit ? 1 : 0;
  }
  if (!values.empty())
    score.score = static_cast<double>(score.hits) / static_cast<double>(values.size());
  return score;
}

}  // namespace switchyard::bench
