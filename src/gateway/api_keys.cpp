#include "gateway/api_keys.h"

#include <fmt/format.h>

#include "http/message.h"

namespace switchyard::gateway {

namespace {

std::vector<tenancy::StaticKey> named(const std::vector<std::string>& keys) {
  std::vector<tenancy::StaticKey> out;
  for (std::size_t i = 0; i < keys.size(); ++i)
    out.push_back({fmt::format("api_keys[{}]", i), keys[i], {}});
  return out;
}

}  // namespace

ApiKeys::ApiKeys(const std::vector<std::string>& keys)
    : table_(std::make_shared<const tenancy::KeyTable>(
          named(keys), std::vector<tenancy::KeyRecord>{}, !keys.empty())) {}

ApiKeys::ApiKeys(const std::vector<tenancy::StaticKey>& statics,
                 const std::vector<tenancy::KeyRecord>& stored, bool stored_ever)
    : table_(std::make_shared<const tenancy::KeyTable>(statics, stored,
                                                       !statics.empty() || stored_ever)) {}

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
  return key ? table_->find(*key) : nullptr;
}

std::uint64_t ApiKeys::note(const KeyEntry* key) const {
  if (!key) return 0;
  const auto index = static_cast<std::uint64_t>(key - table_->entries().data());
  return std::uint64_t{table_->serial()} << 32 | (index + 1);
}

const KeyEntry* ApiKeys::by_note(std::uint64_t note) const {
  const auto index = note & 0xffffffffu;
  if (index == 0 || note >> 32 != table_->serial() || index > table_->entries().size())
    return nullptr;
  return &table_->entries()[index - 1];
}

}  // namespace switchyard::gateway
