// The keys `switchyard keys` manages, in the state database (SQLite): only
// SHA-256 digests and a short prefix are stored, never a key. Every change
// bumps a version the running gateway polls (KeyWatcher), so a key created,
// changed or revoked is honoured within a poll without a reload. Each record
// has a version of its own too: where one record comes from two places (this
// file and Redis, tenancy/shared_keys), the higher version wins.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "tenancy/key_limits.h"
#include "tenancy/sha256.h"
#include "tenancy/sqlite.h"

namespace switchyard::tenancy {

struct KeyRecord {
  std::string name;
  std::string prefix;  // the key's first characters, to recognise it in a list
  Digest hash{};
  tenancy::KeyLimits limits;
  std::int64_t created = 0;  // Unix seconds
  std::optional<std::int64_t> last_used;
  std::optional<std::int64_t> revoked;
  // 1 when created, one more with every change; never goes down.
  std::int64_t version = 1;

  bool operator==(const KeyRecord&) const = default;
};

// Creates the schema when missing; the file when missing too.
Result<Database> open_state_db(const std::string& path);

class KeyStore {
 public:
  static Result<KeyStore> open(const std::string& path);
  // For reading only: the file must exist and is never written.
  static Result<KeyStore> open_existing(const std::string& path);

  // A new key named `name` (letters, digits, '-', '_', '.'; unique, revoked
  // ones included); returns the key, which is stored nowhere.
  Result<std::string> create(const std::string& name, const tenancy::KeyLimits& limits,
                             std::int64_t now);
  // Every key, revoked ones included, by name.
  Result<std::vector<KeyRecord>> list();
  Result<KeyRecord> find(const std::string& name);
  Result<Done> update(const std::string& name, const tenancy::KeyLimits& limits);
  Result<Done> revoke(const std::string& name, std::int64_t now);
  // `record` stored as it is (its version included) when the store has no
  // key of its name or an older version of it; returns whether it was.
  Result<bool> put(const KeyRecord& record);
  // Changes with every create, update and revoke. Prepared once a store:
  // the key watcher asks a kept store every poll.
  Result<std::int64_t> version();

 private:
  explicit KeyStore(Database db) : db_(std::move(db)) {}
  // Runs `change` and bumps the version in one transaction.
  Result<Done> write(Statement& change);
  Database db_;
  std::optional<Statement> version_select_;  // after db_: finalized before it closes
};

}  // namespace switchyard::tenancy
