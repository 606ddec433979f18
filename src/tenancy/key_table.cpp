#include "tenancy/key_table.h"

#include <atomic>

#include "common/constant_time.h"

namespace switchyard::tenancy {

std::uint32_t KeyTable::next_serial() {
  // Tables may be built off the I/O thread (the key watcher's).
  static std::atomic<std::uint32_t> serial{0};
  return ++serial;
}

KeyTable::KeyTable(const std::vector<tenancy::StaticKey>& statics,
                   const std::vector<KeyRecord>& stored, bool enabled, bool pending)
    : enabled_(enabled), pending_(pending) {
  entries_.reserve(statics.size() + stored.size());
  for (const auto& k : statics) entries_.push_back({k.name, sha256(k.key), k.limits, false});
  for (const auto& r : stored)
    entries_.push_back({r.name, r.hash, r.limits, r.revoked.has_value()});
  index();
}

void KeyTable::index() {
  by_digest_.reserve(entries_.size());
  by_name_.reserve(entries_.size());
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    by_digest_.emplace(entries_[i].hash, i);  // the first of a digest wins
    by_name_.emplace(entries_[i].name, i);
  }
}

const KeyEntry* KeyTable::find(std::string_view key) const {
  if (key.empty()) return nullptr;
  const Digest digest = sha256(key);
  const auto it = by_digest_.find(digest);
  if (it == by_digest_.end()) return nullptr;
  const KeyEntry& e = entries_[it->second];
  // The map compared digests byte by byte; the match itself is confirmed
  // without an early exit.
  const auto view = [](const Digest& d) {
    return std::string_view(reinterpret_cast<const char*>(d.data()), d.size());
  };
  if (!constant_time_equal(view(digest), view(e.hash)) || e.revoked) return nullptr;
  return &e;
}

const KeyEntry* KeyTable::by_name(std::string_view name) const {
  const auto it = by_name_.find(name);
  if (it == by_name_.end()) return nullptr;
  const KeyEntry& e = entries_[it->second];
  return e.revoked ? nullptr : &e;
}

}  // namespace switchyard::tenancy
