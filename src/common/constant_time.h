// Comparing secrets (API keys) without telling by the time taken where a
// guess first differs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace switchyard {

// Every byte of the longer input is visited, whatever matches.
inline bool constant_time_equal(std::string_view a, std::string_view b) {
  const std::size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() ^ b.size();
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? a[i] : 0;
    const unsigned char y = i < b.size() ? b[i] : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

}  // namespace switchyard
