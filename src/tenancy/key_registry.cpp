#include "tenancy/key_registry.h"

#include <utility>

#include "tenancy/key_records.h"

namespace switchyard::tenancy {

KeyRegistry::KeyRegistry(std::vector<tenancy::StaticKey> statics, std::vector<KeyRecord> stored)
    : statics_(std::move(statics)), stored_(std::move(stored)) {
  rebuild(true);
}

bool KeyRegistry::set_statics(std::vector<tenancy::StaticKey> statics) {
  if (statics == statics_) return false;
  statics_ = std::move(statics);
  return rebuild(true);
}

bool KeyRegistry::set_stored(std::vector<KeyRecord> stored) {
  if (stored == stored_) return false;
  stored_ = std::move(stored);
  return rebuild(false);
}

bool KeyRegistry::await_shared() {
  awaiting_shared_ = true;
  return rebuild(true);
}

bool KeyRegistry::add_shared(const std::vector<KeyRecord>& shared) {
  const bool first = std::exchange(awaiting_shared_, false);  // the table is pending no more
  bool changed = first;
  for (const auto& r : shared) {
    auto [it, fresh] = shared_.try_emplace(r.name, r);
    // On a tie Redis's copy, as merge_records() does.
    const bool newer = !fresh && r.version >= it->second.version && !(r == it->second);
    if (newer) it->second = r;
    changed |= fresh || newer;
  }
  return changed && rebuild(first);
}

bool KeyRegistry::rebuild(bool statics_changed) {
  std::vector<KeyRecord> shared;
  shared.reserve(shared_.size());
  for (const auto& [name, r] : shared_) shared.push_back(r);
  auto merged = merge_records(stored_, shared);
  if (!statics_changed && table_ && merged == records_) return false;
  records_ = std::move(merged);
  // Once a record was held, authentication stays on whatever a source
  // later lacks (revoking the last key must not open the gateway either).
  records_ever_ |= !records_.empty();
  table_ = std::make_shared<const KeyTable>(statics_, records_, !statics_.empty() || records_ever_,
                                            awaiting_shared_);
  return true;
}

}  // namespace switchyard::tenancy
