// Scoring a needle-in-a-haystack answer: which of the hidden values the
// answer states. A value counts only as a whole number: digits inside a
// longer number ("12345678" holds "2345678") or a decimal do not.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace switchyard::bench {

// The whole numbers an answer states, digits only: maximal digit runs, with
// thousands separators ("1,234,567") joined. A decimal ("1234567.5") is
// returned with its point, so it equals no integer value.
std::vector<std::string> numbers_in(std::string_view text);

struct NeedleScore {
  std::vector<bool> found;  // per value, in the order given
  int hits = 0;
  double score = 0;  // hits / values (0 for no values)
};

// Which `values` (digit strings) the answer states as whole numbers, in any
// order; a value stated twice counts once.
NeedleScore score_answer(std::string_view answer, const std::vector<std::string>& values);

}  // namespace switchyard::bench
