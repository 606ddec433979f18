// The API keys in force at one moment: the config's static keys and the
// stored records (state database, Redis) as one immutable table, which
// KeyRegistry builds anew for every change. A presented key is hashed once
// (SHA-256) and looked up by its digest, so the cost of a request does not
// grow with the number of keys; the entry found is confirmed with a
// constant-time comparison. Logs and metrics name a key by its name only.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tenancy/key_limits.h"
#include "tenancy/key_store.h"
#include "tenancy/sha256.h"

namespace switchyard::tenancy {

struct KeyEntry {
  std::string name;
  Digest hash{};
  tenancy::KeyLimits limits;
  bool revoked = false;  // kept so a revoked key is told apart from an unknown one
};

class KeyTable {
 public:
  KeyTable() = default;
  // Static keys first: a stored record with the same digest does not
  // replace one. Authentication is on when `enabled`, or while `pending`:
  // records are still to be read from Redis, so a key not (yet) known is
  // refused, not let through.
  KeyTable(const std::vector<tenancy::StaticKey>& statics, const std::vector<KeyRecord>& stored,
           bool enabled, bool pending = false);
  // Entries are looked up through views of their own names: never copied.
  KeyTable(const KeyTable&) = delete;
  KeyTable& operator=(const KeyTable&) = delete;

  bool enabled() const { return enabled_ || pending_; }
  bool pending() const { return pending_; }
  // The valid (known, not revoked) entry of `key`, or nullptr.
  const KeyEntry* find(std::string_view key) const;
  // The valid entry named `name`, or nullptr.
  const KeyEntry* by_name(std::string_view name) const;
  const std::vector<KeyEntry>& entries() const { return entries_; }
  // Tells this table apart from every other made in the process, so that
  // what was found in one is never read back from another.
  std::uint32_t serial() const { return serial_; }

 private:
  // A digest is uniformly distributed: its first bytes are a hash already.
  struct DigestHash {
    std::size_t operator()(const Digest& d) const {
      std::size_t h;
      std::memcpy(&h, d.data(), sizeof h);
      return h;
    }
  };
  void index();

  static std::uint32_t next_serial();

  bool enabled_ = false;
  bool pending_ = false;
  std::uint32_t serial_ = next_serial();
  std::vector<KeyEntry> entries_;
  std::unordered_map<Digest, std::size_t, DigestHash> by_digest_;
  std::unordered_map<std::string_view, std::size_t> by_name_;
};

}  // namespace switchyard::tenancy
