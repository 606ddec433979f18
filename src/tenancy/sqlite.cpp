#include "tenancy/sqlite.h"

#include <sqlite3.h>

#include <fmt/format.h>

namespace switchyard::tenancy {

Statement::~Statement() {
  if (stmt_) sqlite3_finalize(stmt_);
}

Statement& Statement::bind(int index, std::int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}
Statement& Statement::bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}
Statement& Statement::bind(int index, std::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::bind_view(int index, std::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
  return *this;
}
Statement& Statement::bind_blob(int index, const void* data, std::size_t size) {
  sqlite3_bind_blob(stmt_, index, data, static_cast<int>(size), SQLITE_TRANSIENT);
  return *this;
}
Statement& Statement::bind_null(int index) {
  sqlite3_bind_null(stmt_, index);
  return *this;
}

Result<bool> Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return Error{sqlite3_errmsg(db_)};
}

Result<Done> Statement::run() {
  for (;;) {
    auto more = step();
    if (!more) {
      reset();
      return more.error();
    }
    if (!*more) break;
  }
  reset();
  return Done{};
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}
std::int64_t Statement::int64(int column) const {
  return sqlite3_column_int64(stmt_, column);
}
double Statement::real(int column) const {
  return sqlite3_column_double(stmt_, column);
}
std::string Statement::text(int column) const {
  const auto* p = sqlite3_column_text(stmt_, column);
  return p ? std::string(reinterpret_cast<const char*>(p),
                         static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)))
           : std::string();
}
std::string Statement::blob(int column) const {
  const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
  return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)))
           : std::string();
}

Result<Database> Database::open(const std::string& path, bool read_only) {
  // SQLite counts every allocation under a global mutex unless told not to
  // before it starts; nothing here reads those counts, and the ledger's
  // writer allocates for every row.
  static const bool quiet_allocations = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK;
  (void)quiet_allocations;
  sqlite3* db = nullptr;
  const int flags =
      (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
      SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string why = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Error{fmt::format("{}: cannot open the state database: {}", path, why)};
  }
  Database d(db);
  sqlite3_busy_timeout(db, 5000);
  if (!read_only) {
    if (auto wal = d.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"); !wal)
      return Error{fmt::format("{}: {}", path, wal.error().message)};
  }
  return d;
}

Database::~Database() {
  if (db_) sqlite3_close_v2(db_);  // closes once its last statement is finalized
}

Result<Done> Database::exec(std::string_view sql) {
  char* message = nullptr;
  if (sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    std::string why = message ? message : error();
    sqlite3_free(message);
    return Error{why};
  }
  return Done{};
}

Result<Statement> Database::prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr) !=
      SQLITE_OK)
    return Error{error()};
  return Statement(db_, stmt);
}

std::int64_t Database::last_insert_rowid() const {
  return sqlite3_last_insert_rowid(db_);
}

std::string Database::error() const {
  return sqlite3_errmsg(db_);
}

}  // namespace switchyard::tenancy
