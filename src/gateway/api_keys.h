// Who may use the gateway: the config's static api_keys and the keys of the
// state database (tenancy::KeyStore), as one table swapped whole when either
// changes. Keys are held as SHA-256 digests and compared in constant time;
// logs and metrics name a key by its name only.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/fleet_config.h"
#include "http/message.h"
#include "tenancy/key_store.h"
#include "tenancy/sha256.h"

namespace switchyard::gateway {

struct KeyEntry {
  std::string name;
  tenancy::Digest hash{};
  fleet::KeyLimits limits;
  bool revoked = false;  // kept so a revoked key is told apart from an unknown one
};

class ApiKeys {
 public:
  // Static keys only, named api_keys[i].
  explicit ApiKeys(const std::vector<std::string>& keys);
  // `stored` from the state database; `stored_ever` is whether it has ever
  // held a key: revoking the last one must not switch authentication off.
  ApiKeys(const std::vector<fleet::StaticKey>& statics,
          const std::vector<tenancy::KeyRecord>& stored, bool stored_ever);

  bool enabled() const { return enabled_; }
  // The valid key the request presents ("Authorization: Bearer <key>" for
  // OpenAI clients, "x-api-key: <key>" for Anthropic ones); nullptr when
  // none, unknown or revoked. Every entry is compared, whatever matches.
  const KeyEntry* find(const http::Headers& headers) const;
  // The valid key named `name`; nullptr when none or revoked.
  const KeyEntry* by_name(std::string_view name) const;
  bool allows(const http::Headers& headers) const { return !enabled_ || find(headers); }
  const std::vector<KeyEntry>& entries() const { return entries_; }

  // The key a request presents, if any.
  static std::optional<std::string_view> presented(const http::Headers& headers);

 private:
  std::vector<KeyEntry> entries_;
  bool enabled_ = false;
};

}  // namespace switchyard::gateway
