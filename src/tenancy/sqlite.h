// A thin RAII layer over libsqlite3: a connection and prepared statements,
// errors as values. One connection per thread (SQLite's own rule for
// sharing nothing); every connection uses WAL and waits for a writer rather
// than failing at once, since the gateway and the keys CLI share the file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace switchyard::tenancy {

// What a step that yields nothing returns when it succeeds.
struct Done {};

class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Statement(Statement&& o) noexcept : db_(o.db_), stmt_(o.stmt_) { o.stmt_ = nullptr; }
  Statement& operator=(Statement&&) = delete;
  ~Statement();

  // Parameters are 1-based, as in SQL's ?1 ?2.
  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view text);
  // Without a copy: `text` must stay valid until the statement has run.
  Statement& bind_view(int index, std::string_view text);
  Statement& bind_blob(int index, const void* data, std::size_t size);
  Statement& bind_null(int index);
  Statement& bind(int index, const std::optional<std::int64_t>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }

  // true: a row is ready; false: done. An error names SQLite's message.
  Result<bool> step();
  // step() until done, for statements without rows.
  Result<Done> run();
  void reset();

  bool is_null(int column) const;
  std::int64_t int64(int column) const;
  double real(int column) const;
  std::string text(int column) const;
  std::string blob(int column) const;
  std::optional<std::int64_t> optional_int64(int column) const {
    return is_null(column) ? std::nullopt : std::optional(int64(column));
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

class Database {
 public:
  // Opens (creating when missing) `path`; read_only opens an existing file only.
  static Result<Database> open(const std::string& path, bool read_only = false);
  Database(Database&& o) noexcept : db_(o.db_) { o.db_ = nullptr; }
  Database& operator=(Database&&) = delete;
  ~Database();

  Result<Done> exec(std::string_view sql);
  Result<Statement> prepare(std::string_view sql);
  std::string error() const;
  // The rowid of the last row this connection inserted.
  std::int64_t last_insert_rowid() const;

 private:
  explicit Database(sqlite3* db) : db_(db) {}
  sqlite3* db_;
};

}  // namespace switchyard::tenancy
