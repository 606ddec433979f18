#include "tenancy/key_store.h"

#include <algorithm>
#include <random>

#include <fmt/format.h>

namespace switchyard::tenancy {

namespace {

constexpr const char* schema = R"sql(
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta VALUES ('keys_version', 0);
CREATE TABLE IF NOT EXISTS keys (
  name TEXT PRIMARY KEY,
  prefix TEXT NOT NULL,
  hash BLOB NOT NULL UNIQUE,
  models TEXT NOT NULL DEFAULT '',
  rpm INTEGER, tpm INTEGER, tokens_per_day INTEGER,
  max_concurrency INTEGER, max_sessions INTEGER,
  session_idle_ms INTEGER NOT NULL,
  priority INTEGER NOT NULL DEFAULT 0,
  weight REAL NOT NULL DEFAULT 1,
  created INTEGER NOT NULL,
  last_used INTEGER,
  revoked INTEGER,
  version INTEGER NOT NULL DEFAULT 1);
CREATE TABLE IF NOT EXISTS usage (
  time_ms INTEGER NOT NULL,
  request_id TEXT NOT NULL,
  key TEXT NOT NULL,
  model TEXT NOT NULL,
  instance TEXT NOT NULL,
  endpoint TEXT NOT NULL,
  outcome TEXT NOT NULL,
  status INTEGER NOT NULL,
  prompt_tokens INTEGER NOT NULL,
  cached_tokens INTEGER NOT NULL,
  completion_tokens INTEGER NOT NULL,
  max_tokens INTEGER,
  ttft_ms REAL,
  duration_ms REAL NOT NULL,
  session TEXT NOT NULL);
-- usage by time: a range of rowids a written batch (tenancy/usage_batches.h),
-- where files from before had an index on time_ms.
CREATE TABLE IF NOT EXISTS usage_batches (
  first_rowid INTEGER PRIMARY KEY,
  last_rowid INTEGER NOT NULL,
  max_time_ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS usage_batches_by_time ON usage_batches (max_time_ms);
DROP INDEX IF EXISTS usage_by_time;
)sql";

constexpr const char* columns =
    "name, prefix, hash, models, rpm, tpm, tokens_per_day, max_concurrency, max_sessions, "
    "session_idle_ms, priority, weight, created, last_used, revoked, version";

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::size_t from = 0;
  while (from < text.size()) {
    auto comma = text.find(',', from);
    if (comma == std::string::npos) comma = text.size();
    if (comma > from) out.push_back(text.substr(from, comma - from));
    from = comma + 1;
  }
  return out;
}

KeyRecord read_record(const Statement& s) {
  KeyRecord r;
  r.name = s.text(0);
  r.prefix = s.text(1);
  const auto hash = s.blob(2);
  std::copy_n(hash.begin(), std::min(hash.size(), r.hash.size()), r.hash.begin());
  r.limits.models = split(s.text(3));
  r.limits.rpm = s.optional_int64(4);
  r.limits.tpm = s.optional_int64(5);
  r.limits.tokens_per_day = s.optional_int64(6);
  if (!s.is_null(7)) r.limits.max_concurrency = static_cast<int>(s.int64(7));
  if (!s.is_null(8)) r.limits.max_sessions = static_cast<int>(s.int64(8));
  r.limits.session_idle = std::chrono::milliseconds(s.int64(9));
  r.limits.priority = static_cast<int>(s.int64(10));
  r.limits.weight = s.real(11);
  r.created = s.int64(12);
  r.last_used = s.optional_int64(13);
  r.revoked = s.optional_int64(14);
  r.version = s.int64(15);
  return r;
}

// ?4.. ?12 in `columns` order.
void bind_limits(Statement& s, const tenancy::KeyLimits& l) {
  s.bind(4, join(l.models)).bind(5, l.rpm).bind(6, l.tpm).bind(7, l.tokens_per_day);
  l.max_concurrency ? s.bind(8, std::int64_t{*l.max_concurrency}) : s.bind_null(8);
  l.max_sessions ? s.bind(9, std::int64_t{*l.max_sessions}) : s.bind_null(9);
  s.bind(10, static_cast<std::int64_t>(l.session_idle.count()))
      .bind(11, std::int64_t{l.priority})
      .bind(12, l.weight);
}

std::string new_secret() {
  static constexpr char alphabet[] =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  std::random_device entropy;  // getrandom(2) on Linux
  std::uniform_int_distribution<int> pick(0, 61);
  std::string key = "sy-";
  for (int i = 0; i < 40; ++i) key += alphabet[pick(entropy)];  // ~238 bits
  return key;
}

}  // namespace

Result<Database> open_state_db(const std::string& path) {
  auto db = Database::open(path);
  if (!db) return db.error();
  if (auto ok = db->exec(schema); !ok)
    return Error{fmt::format("{}: cannot create the state tables: {}", path, ok.error().message)};
  // Files from before the records had versions: every record starts at 1.
  if (!db->prepare("SELECT version FROM keys LIMIT 0"))
    if (auto ok = db->exec("ALTER TABLE keys ADD COLUMN version INTEGER NOT NULL DEFAULT 1"); !ok)
      return Error{fmt::format("{}: cannot add the key versions: {}", path, ok.error().message)};
  return db;
}

Result<KeyStore> KeyStore::open(const std::string& path) {
  auto db = open_state_db(path);
  if (!db) return db.error();
  return KeyStore(std::move(*db));
}

Result<KeyStore> KeyStore::open_existing(const std::string& path) {
  auto db = Database::open(path, /*read_only=*/true);
  if (!db) return db.error();
  return KeyStore(std::move(*db));
}

Result<Done> KeyStore::write(Statement& change) {
  if (auto ok = db_.exec("BEGIN IMMEDIATE"); !ok) return ok.error();
  auto done = change.run();
  if (done) done = db_.exec("UPDATE meta SET value = value + 1 WHERE name = 'keys_version'");
  if (!done) {
    (void)db_.exec("ROLLBACK");
    return done.error();
  }
  return db_.exec("COMMIT");
}

Result<std::string> KeyStore::create(const std::string& name, const tenancy::KeyLimits& limits,
                                     std::int64_t now) {
  if (!tenancy::valid_key_name(name))
    return Error{fmt::format("'{}' is not a key name: {}", name, tenancy::key_name_rule)};
  if (auto existing = find(name); existing)
    return Error{fmt::format("a key named '{}' exists already{}", name,
                             existing->revoked ? " (revoked)" : "")};
  const std::string secret = new_secret();
  const Digest hash = sha256(secret);
  auto insert =
      db_.prepare(fmt::format("INSERT INTO keys ({}) VALUES "
                              "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
                              "NULL, NULL, 1)",
                              columns));
  if (!insert) return insert.error();
  insert->bind(1, name).bind(2, secret.substr(0, 10)).bind_blob(3, hash.data(), hash.size());
  bind_limits(*insert, limits);
  insert->bind(13, now);
  if (auto done = write(*insert); !done) return done.error();
  return secret;
}

Result<std::vector<KeyRecord>> KeyStore::list() {
  auto select = db_.prepare(fmt::format("SELECT {} FROM keys ORDER BY name", columns));
  if (!select) return select.error();
  std::vector<KeyRecord> out;
  for (;;) {
    auto row = select->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back(read_record(*select));
  }
  return out;
}

Result<KeyRecord> KeyStore::find(const std::string& name) {
  auto select = db_.prepare(fmt::format("SELECT {} FROM keys WHERE name = ?1", columns));
  if (!select) return select.error();
  select->bind(1, name);
  auto row = select->step();
  if (!row) return row.error();
  if (!*row) return Error{fmt::format("no key named '{}'", name)};
  return read_record(*select);
}

Result<Done> KeyStore::update(const std::string& name, const tenancy::KeyLimits& limits) {
  if (auto existing = find(name); !existing) return existing.error();
  auto update = db_.prepare(
      "UPDATE keys SET models = ?4, rpm = ?5, tpm = ?6, tokens_per_day = ?7, "
      "max_concurrency = ?8, max_sessions = ?9, session_idle_ms = ?10, priority = ?11, "
      "weight = ?12, version = version + 1 WHERE name = ?1");
  if (!update) return update.error();
  update->bind(1, name);
  bind_limits(*update, limits);
  return write(*update);
}

Result<Done> KeyStore::revoke(const std::string& name, std::int64_t now) {
  auto existing = find(name);
  if (!existing) return existing.error();
  if (existing->revoked) return Error{fmt::format("the key '{}' is revoked already", name)};
  auto update = db_.prepare("UPDATE keys SET revoked = ?2, version = version + 1 WHERE name = ?1");
  if (!update) return update.error();
  update->bind(1, name).bind(2, now);
  return write(*update);
}

Result<bool> KeyStore::put(const KeyRecord& r) {
  if (!tenancy::valid_key_name(r.name)) return Error{fmt::format("'{}' is not a key name", r.name)};
  auto existing = find(r.name);
  if (existing && existing->version >= r.version) return false;
  auto upsert = db_.prepare(
      fmt::format("INSERT OR REPLACE INTO keys ({}) VALUES "
                  "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
                  columns));
  if (!upsert) return upsert.error();
  upsert->bind(1, r.name).bind(2, r.prefix).bind_blob(3, r.hash.data(), r.hash.size());
  bind_limits(*upsert, r.limits);
  upsert->bind(13, r.created)
      .bind(14, existing ? existing->last_used : r.last_used)
      .bind(15, r.revoked)
      .bind(16, r.version);
  if (auto done = write(*upsert); !done) return done.error();
  return true;
}

Result<std::int64_t> KeyStore::version() {
  if (!version_select_) {
    auto select = db_.prepare("SELECT value FROM meta WHERE name = 'keys_version'");
    if (!select) return select.error();
    version_select_.emplace(std::move(*select));
  }
  auto& select = *version_select_;
  auto row = select.step();
  const std::int64_t version = row && *row ? select.int64(0) : 0;
  // Ends the read: a statement left on its row would hold its snapshot.
  select.reset();
  if (!row) return row.error();
  return version;
}

}  // namespace switchyard::tenancy
