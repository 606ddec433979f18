// Who may use the gateway: the key table in force (tenancy::KeyTable, which
// tenancy::KeyRegistry publishes whole for every change), read from a
// request's headers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/fleet_config.h"
#include "http/message.h"
#include "tenancy/key_store.h"
#include "tenancy/key_table.h"

namespace switchyard::gateway {

using KeyEntry = tenancy::KeyEntry;

class ApiKeys {
 public:
  explicit ApiKeys(std::shared_ptr<const tenancy::KeyTable> table) : table_(std::move(table)) {}
  // Static keys only, named api_keys[i].
  explicit ApiKeys(const std::vector<std::string>& keys);
  // `stored` from the state database; `stored_ever` is whether it has ever
  // held a key: revoking the last one must not switch authentication off.
  ApiKeys(const std::vector<tenancy::StaticKey>& statics,
          const std::vector<tenancy::KeyRecord>& stored, bool stored_ever);

  bool enabled() const { return table_->enabled(); }
  // Redis's key records not read yet (tenancy::KeyRegistry::await_shared).
  bool pending() const { return table_->pending(); }
  // The valid key the request presents ("Authorization: Bearer <key>" for
  // OpenAI clients, "x-api-key: <key>" for Anthropic ones); nullptr when
  // none, unknown or revoked.
  const KeyEntry* find(const http::Headers& headers) const;
  // The valid key named `name`; nullptr when none or revoked.
  const KeyEntry* by_name(std::string_view name) const { return table_->by_name(name); }
  bool allows(const http::Headers& headers) const { return !enabled() || find(headers); }
  // What find() found at a request's head, noted for its body stage to take
  // back without hashing the key again (one SHA-256 per request). by_note()
  // gives nullptr for 0, or when the table changed since.
  std::uint64_t note(const KeyEntry* key) const;
  const KeyEntry* by_note(std::uint64_t note) const;
  const std::vector<KeyEntry>& entries() const { return table_->entries(); }
  // The table in force, kept whole by its holder while the table is swapped.
  std::shared_ptr<const tenancy::KeyTable> table() const { return table_; }

  // The key a request presents, if any.
  static std::optional<std::string_view> presented(const http::Headers& headers);

 private:
  std::shared_ptr<const tenancy::KeyTable> table_;
};

}  // namespace switchyard::gateway
