// The usage ledger's index by time: one row a written batch, not one a
// request.
//
// An index on `usage.time_ms` cost every request's row a second B-tree
// insert, some 2,100 of the ledger's 8,700 instructions a request
// (docs/performance.md). Rows are appended in rowid order, so a batch is a
// range of rowids: `usage_batches` holds each range with the latest time in
// it, and the rows since a time are found from the first range whose latest
// time is that late on. That holds whatever order the clock gave the rows
// (a clock set back, two gateways writing one file), as long as every row
// up to the last range is in one: rows written without a range (by an
// earlier version, or left at the end of a file edited by hand) are given
// one before the next batch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "tenancy/sqlite.h"

namespace switchyard::tenancy {

// SELECT `columns` FROM usage WHERE time_ms >= ?1 `rest`: by the batches'
// ranges, or over the whole table in a file from before them (opened
// read-only, where they cannot be added).
Result<Statement> prepare_usage_since(Database& db, std::string_view columns,
                                      std::string_view rest);

// The writer's side, inside each batch's transaction.
class UsageBatches {
 public:
  static Result<UsageBatches> prepare(Database& db);

  // Before a batch's rows: gives the rows after the last range one range
  // of their own (or, when rows at the end were deleted, shortens the
  // ranges to what is left). Returns the last rowid now, after which the
  // batch's rows go.
  Result<std::int64_t> cover();
  // After them: the range (after, last] and its latest time.
  Result<Done> mark(std::int64_t after, std::int64_t last, std::int64_t latest_ms);

 private:
  UsageBatches(Statement top, Statement covered, Statement add_range, Statement add_rest,
               Statement drop, Statement shorten)
      : top_(std::move(top)),
        covered_(std::move(covered)),
        add_range_(std::move(add_range)),
        add_rest_(std::move(add_rest)),
        drop_(std::move(drop)),
        shorten_(std::move(shorten)) {}
  Result<std::int64_t> single(Statement& query);

  Statement top_, covered_, add_range_, add_rest_, drop_, shorten_;
};

}  // namespace switchyard::tenancy
