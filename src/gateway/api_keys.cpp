#include "gateway/api_keys.h"

#include <fmt/format.h>

#include "common/constant_time.h"
#include "http/message.h"

namespace switchyard::gateway {

ApiKeys::ApiKeys(const std::vector<std::string>& keys) {
  for (std::size_t i = 0; i < keys.size(); ++i)
    entries_.push_back({fmt::format("api_keys[{}]", i), tenancy::sha256(keys[i]), {}, false});
  enabled_ = !entries_.empty();
}

ApiKeys::ApiKeys(const std::vector<fleet::StaticKey>& statics,
                 const std::vector<tenancy::KeyRecord>& stored, bool stored_ever) {
  for (const auto& k : statics)
    entries_.push_back({k.name, tenancy::sha256(k.key), k.limits, false});
  for (const auto& r : stored)
    entries_.push_back({r.name, r.hash, r.limits, r.revoked.has_value()});
  enabled_ = !statics.empty() || stored_ever;
}

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

const KeyEntry* ApiKeys::find(const http::Headers& headers) const {
  const auto key = presented(headers);
  if (!key || key->empty()) return nullptr;
  const tenancy::Digest digest = tenancy::sha256(*key);
  const std::string_view wanted(reinterpret_cast<const char*>(digest.data()), digest.size());
  const KeyEntry* found = nullptr;
  for (const auto& e : entries_) {  // no early exit
    const std::string_view have(reinterpret_cast<const char*>(e.hash.data()), e.hash.size());
    if (constant_time_equal(wanted, have) && !found) found = &e;
  }
  return found && !found->revoked ? found : nullptr;
}

const KeyEntry* ApiKeys::by_name(std::string_view name) const {
  for (const auto& e : entries_)
    if (e.name == name) return e.revoked ? nullptr : &e;
  return nullptr;
}

}  // namespace switchyard::gateway
