#include "gateway/api_keys.h"

#include "common/constant_time.h"
#include "http/message.h"

namespace switchyard::gateway {

std::optional<std::string_view> ApiKeys::presented(const http::Headers& headers) {
  if (auto authorization = headers.find("authorization")) {
    std::string_view value = *authorization;
    constexpr std::string_view bearer = "Bearer ";
    if (value.size() < bearer.size() || !http::iequals(value.substr(0, bearer.size()), bearer))
      return std::string_view();  // presented, but not as a bearer token: never valid
    return value.substr(bearer.size());
  }
  return headers.find("x-api-key");
}

bool ApiKeys::allows(const http::Headers& headers) const {
  if (keys_.empty()) return true;
  const auto key = presented(headers);
  if (!key || key->empty()) return false;
  bool ok = false;
  for (const auto& k : keys_) ok |= constant_time_equal(*key, k);  // no early exit
  return ok;
}

}  // namespace switchyard::gateway
