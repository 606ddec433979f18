#include "gateway/api_keys.h"

#include "http/message.h"

namespace switchyard::gateway {

namespace {

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Every byte of the longer input is visited, whatever matches.
  const std::size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() ^ b.size();
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? a[i] : 0;
    const unsigned char y = i < b.size() ? b[i] : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

}  // namespace

bool ApiKeys::allows(std::optional<std::string_view> authorization) const {
  if (keys_.empty()) return true;
  if (!authorization) return false;
  std::string_view value = *authorization;
  constexpr std::string_view bearer = "Bearer ";
  if (value.size() < bearer.size() || !http::iequals(value.substr(0, bearer.size()), bearer))
    return false;
  value.remove_prefix(bearer.size());
  bool ok = false;
  for (const auto& key : keys_) ok |= constant_time_equal(value, key);  // no early exit
  return ok;
}

}  // namespace switchyard::gateway
