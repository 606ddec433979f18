#include "tenancy/usage_batches.h"

#include <vector>

#include <fmt/format.h>

namespace switchyard::tenancy {

Result<Statement> prepare_usage_since(Database& db, std::string_view columns,
                                      std::string_view rest) {
  const bool ranged = static_cast<bool>(db.prepare("SELECT 1 FROM usage_batches LIMIT 0"));
  // No range late enough: the rows after the last range, which no range
  // vouches for.
  constexpr std::string_view kFrom =
      "rowid >= coalesce((SELECT min(first_rowid) FROM usage_batches WHERE max_time_ms >= ?1), "
      "(SELECT last_rowid + 1 FROM usage_batches ORDER BY first_rowid DESC LIMIT 1), 0) AND ";
  return db.prepare(fmt::format("SELECT {} FROM usage WHERE {}time_ms >= ?1 {}", columns,
                                ranged ? kFrom : std::string_view(), rest));
}

Result<UsageBatches> UsageBatches::prepare(Database& db) {
  const char* sql[] = {
      "SELECT coalesce(max(rowid), 0) FROM usage",
      "SELECT coalesce((SELECT last_rowid FROM usage_batches ORDER BY first_rowid DESC LIMIT 1), "
      "0)",
      "INSERT INTO usage_batches VALUES (?1, ?2, ?3)",
      "INSERT INTO usage_batches SELECT ?1, ?2, coalesce(max(time_ms), 0) FROM usage "
      "WHERE rowid BETWEEN ?1 AND ?2",
      "DELETE FROM usage_batches WHERE first_rowid > ?1",
      "UPDATE usage_batches SET last_rowid = ?1 WHERE last_rowid > ?1"};
  std::vector<Statement> prepared;
  for (const char* s : sql) {
    auto statement = db.prepare(s);
    if (!statement) return statement.error();
    prepared.push_back(std::move(*statement));
  }
  return UsageBatches(std::move(prepared[0]), std::move(prepared[1]), std::move(prepared[2]),
                      std::move(prepared[3]), std::move(prepared[4]), std::move(prepared[5]));
}

Result<std::int64_t> UsageBatches::single(Statement& query) {
  auto row = query.step();
  const std::int64_t value = row && *row ? query.int64(0) : 0;
  query.reset();
  if (!row) return row.error();
  return value;
}

Result<std::int64_t> UsageBatches::cover() {
  auto top = single(top_);
  if (!top) return top.error();
  auto covered = single(covered_);
  if (!covered) return covered.error();
  if (*top > *covered) {
    add_rest_.bind(1, *covered + 1).bind(2, *top);
    if (auto ok = add_rest_.run(); !ok) return ok.error();
  } else if (*top < *covered) {
    drop_.bind(1, *top);
    if (auto ok = drop_.run(); !ok) return ok.error();
    shorten_.bind(1, *top);
    if (auto ok = shorten_.run(); !ok) return ok.error();
  }
  return *top;
}

Result<Done> UsageBatches::mark(std::int64_t after, std::int64_t last, std::int64_t latest_ms) {
  if (last <= after) return Done{};
  add_range_.bind(1, after + 1).bind(2, last).bind(3, latest_ms);
  return add_range_.run();
}

}  // namespace switchyard::tenancy
