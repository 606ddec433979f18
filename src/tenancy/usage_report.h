// What `switchyard usage` reads from the ledger: totals grouped by key,
// model, UTC day or session, and the requests themselves as a trace.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "tenancy/sqlite.h"
#include "tenancy/usage_ledger.h"

namespace switchyard::tenancy {

enum class GroupBy { key, model, day, session };

struct UsageTotals {
  std::string group;  // the key's name, model, YYYY-MM-DD or session
  std::int64_t requests = 0;
  std::int64_t errors = 0;  // answered with a status of 400 or more
  std::int64_t prompt_tokens = 0;
  std::int64_t cached_tokens = 0;
  std::int64_t completion_tokens = 0;
  double mean_ttft_ms = 0;  // over the requests that had a first byte
  double mean_duration_ms = 0;
};

// Rows from `since_ms` (Unix milliseconds) on, grouped, most tokens first.
Result<std::vector<UsageTotals>> usage_totals(Database& db, std::int64_t since_ms, GroupBy by);
// The rows themselves from `since_ms` on, oldest first.
Result<std::vector<UsageRow>> usage_rows(Database& db, std::int64_t since_ms);

}  // namespace switchyard::tenancy
