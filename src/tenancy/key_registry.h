// Where the keys in force come from, assembled in one place: the config's
// api_keys (YAML), the state database's records (SQLite, read whole at start
// and by KeyWatcher since) and, with `redis:`, the records other gateways
// shared there (SharedKeys). Every change publishes a new immutable
// KeyTable; the gateway reads whichever is current.
//
// It fails closed. The state database is read whole before the gateway
// starts (load_stored_keys: an unreadable one stops it); later reads that
// fail leave the last good records in force. Records learned from Redis are
// held even when Redis later has fewer (a restart without persistence): a
// record is only ever replaced by a higher version of itself, never dropped,
// and what is held is published back (SharedKeys). Authentication, once on,
// stays on: a stored record is never removed, only revoked.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tenancy/key_limits.h"
#include "tenancy/key_store.h"
#include "tenancy/key_table.h"

namespace switchyard::tenancy {

class KeyRegistry {
 public:
  KeyRegistry(std::vector<tenancy::StaticKey> statics, std::vector<KeyRecord> stored);

  // The table in force.
  std::shared_ptr<const KeyTable> table() const { return table_; }
  // Every stored record held (this state database's and Redis's, the higher
  // version of each name), sorted by name: what this gateway publishes.
  const std::vector<KeyRecord>& records() const { return records_; }

  // Each returns whether the table changed.
  bool set_statics(std::vector<tenancy::StaticKey> statics);
  // The state database's records, read whole.
  bool set_stored(std::vector<KeyRecord> stored);
  // Records read from Redis: added to those held, never removing one.
  bool add_shared(const std::vector<KeyRecord>& shared);
  // With `redis:`, until its records are first read (add_shared), the table
  // is pending: a key this gateway does not hold yet is refused, never let
  // through because the table is empty so far.
  bool await_shared();

 private:
  // records_ and table_ from the sources; whether records_ changed.
  bool rebuild(bool statics_changed);

  std::vector<tenancy::StaticKey> statics_;
  std::vector<KeyRecord> stored_;
  std::map<std::string, KeyRecord> shared_;  // by name, the highest version seen
  std::vector<KeyRecord> records_;
  std::shared_ptr<const KeyTable> table_;
  bool records_ever_ = false;
  bool awaiting_shared_ = false;
};

}  // namespace switchyard::tenancy
