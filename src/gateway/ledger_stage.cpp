#include "gateway/ledger_stage.h"

#include <chrono>

namespace switchyard::gateway {

void RecordUsage::finish(RequestContext& ctx) {
  const auto& r = ctx.record;
  tenancy::UsageRowView row;  // views into the request's own strings
  const auto arrival = std::chrono::system_clock::now() -
                       std::chrono::duration_cast<std::chrono::system_clock::duration>(
                           std::chrono::duration<double>(r.seconds_since_start()));
  row.time_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(arrival.time_since_epoch()).count();
  row.request_id = r.id;
  row.key = ctx.key_name;
  row.model = r.model.empty() ? std::string_view(ctx.model) : std::string_view(r.model);
  row.instance = r.instance;
  row.endpoint = ctx.route.path;
  row.outcome = to_string(r.outcome());
  row.status = r.logged_status();
  if (r.usage) {
    row.prompt_tokens = r.usage->prompt_tokens;
    row.cached_tokens = r.usage->cached_tokens;
    row.completion_tokens = r.usage->completion_tokens;
  }
  row.max_tokens = ctx.facts.max_tokens;
  row.ttft_ms = r.ttfb < 0 ? -1 : r.ttfb * 1000;
  row.duration_ms = r.seconds_since_start() * 1000;
  row.session = ctx.session;
  if (!ctx.key_name.empty())
    today_.add(ctx.key_name, row.prompt_tokens, row.completion_tokens,
               std::chrono::system_clock::now());
  ledger_.submit(row);
}

}  // namespace switchyard::gateway
