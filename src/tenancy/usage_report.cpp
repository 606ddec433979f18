#include "tenancy/usage_report.h"

#include <fmt/format.h>

#include "tenancy/usage_batches.h"

namespace switchyard::tenancy {

Result<std::vector<UsageTotals>> usage_totals(Database& db, std::int64_t since_ms, GroupBy by) {
  const char* group = "key";
  switch (by) {
    case GroupBy::key:
      group = "key";
      break;
    case GroupBy::model:
      group = "model";
      break;
    case GroupBy::day:
      group = "date(time_ms / 1000, 'unixepoch')";
      break;
    case GroupBy::session:
      group = "session";
      break;
  }
  auto select = prepare_usage_since(
      db,
      fmt::format("{}, count(*), sum(status >= 400), sum(prompt_tokens), sum(cached_tokens), "
                  "sum(completion_tokens), coalesce(avg(ttft_ms), 0), avg(duration_ms)",
                  group),
      fmt::format("GROUP BY {0} ORDER BY sum(prompt_tokens + completion_tokens) DESC, {0}", group));
  if (!select) return select.error();
  select->bind(1, since_ms);
  std::vector<UsageTotals> out;
  for (;;) {
    auto row = select->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back({select->text(0), select->int64(1), select->int64(2), select->int64(3),
                   select->int64(4), select->int64(5), select->real(6), select->real(7)});
  }
  return out;
}

Result<std::vector<UsageRow>> usage_rows(Database& db, std::int64_t since_ms) {
  auto select = prepare_usage_since(
      db,
      "time_ms, request_id, key, model, instance, endpoint, outcome, status, prompt_tokens, "
      "cached_tokens, completion_tokens, max_tokens, ttft_ms, duration_ms, session",
      "ORDER BY time_ms, rowid");
  if (!select) return select.error();
  select->bind(1, since_ms);
  std::vector<UsageRow> out;
  for (;;) {
    auto row = select->step();
    if (!row) return row.error();
    if (!*row) break;
    UsageRow r;
    r.time_ms = select->int64(0);
    r.request_id = select->text(1);
    r.key = select->text(2);
    r.model = select->text(3);
    r.instance = select->text(4);
    r.endpoint = select->text(5);
    r.outcome = select->text(6);
    r.status = static_cast<int>(select->int64(7));
    r.prompt_tokens = select->int64(8);
    r.cached_tokens = select->int64(9);
    r.completion_tokens = select->int64(10);
    r.max_tokens = select->optional_int64(11);
    r.ttft_ms = select->is_null(12) ? -1 : select->real(12);
    r.duration_ms = select->real(13);
    r.session = select->text(14);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace switchyard::tenancy
