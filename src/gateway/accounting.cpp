#include "gateway/accounting.h"

#include <cmath>

#include <fmt/compile.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/json_text.h"
#include "gateway/log_target.h"
#include "gateway/request_tracing.h"

namespace switchyard::gateway {

const char* to_string(RequestRecord::Outcome outcome) {
  switch (outcome) {
    case RequestRecord::Outcome::ok:
      return "ok";
    case RequestRecord::Outcome::error:
      return "error";
    case RequestRecord::Outcome::upstream_failed:
      return "upstream_failed";
    case RequestRecord::Outcome::client_closed:
      return "client_closed";
    case RequestRecord::Outcome::shutting_down:
      return "shutting_down";
  }
  return "unknown";
}

void Accounting::finish(RequestContext& ctx) {
  const auto& record = ctx.record;
  const std::string_view key = ctx.key_name;
  const double total = record.seconds_since_start();
  const int status = record.logged_status();
  const std::string_view outcome = to_string(record.outcome());
  metrics_.request_finished(record.model, record.instance, status, outcome, record.ttfb, total);
  if (record.usage)
    metrics_.add_tokens(record.model, record.usage->prompt_tokens, record.usage->completion_tokens);
  if (!key.empty()) {
    // A limit's refusal (429) or the key's model list (403); other errors
    // are the request's own or the fleet's.
    const bool refused = (status == 429 || status == 403) && !record.error_code.empty();
    const auto& u = record.usage;
    metrics_.key_request_finished(
        key, outcome, u ? u->prompt_tokens : 0, u ? u->completion_tokens : 0,
        u ? u->cached_tokens : 0,
        refused ? std::string_view(record.error_code) : std::string_view());
  }
  const std::string trace_id = ctx.trace ? obs::to_hex(ctx.trace->trace_id()) : std::string();
  // The one place a request's spans leave for the exporter.
  if (tracing_) tracing_->finish(ctx);
  if (json_log_)
    log_json(ctx, trace_id);
  else
    log_line(ctx, trace_id);
}

void Accounting::log_line(const RequestContext& ctx, const std::string& trace_id) const {
  const auto& record = ctx.record;
  const auto& head = ctx.request.head;
  const std::string_view key = ctx.key_name;
  const int status = record.logged_status();
  const std::string_view outcome = to_string(record.outcome());
  const double total = record.seconds_since_start();
  // Formatted at compile time, and milliseconds as whole tenths (integers
  // format at a fraction of a float's cost): one line per request is on the
  // hot path.
  const auto tenths = [](double seconds) { return std::llround(std::max(seconds, 0.0) * 1e4); };
  const long long ttfb = tenths(record.ttfb), ms = tenths(total);
  std::string target;  // the query's values left out: a value may be a secret
  fmt::memory_buffer line;
  fmt::format_to(
      std::back_inserter(line),
      FMT_COMPILE("access id={} {} {} model={} instance={} status={} in={}B out={}B "
                  "ttfb_ms={}.{} ms={}.{}"),
      record.id, head.method, log_target(head.target, target),
      record.model.empty() ? std::string_view("-") : std::string_view(record.model),
      record.instance.empty() ? std::string_view("-") : std::string_view(record.instance), status,
      record.bytes_in, record.bytes_out, ttfb / 10, ttfb % 10, ms / 10, ms % 10);
  if (record.outcome() != RequestRecord::Outcome::ok &&
      record.outcome() != RequestRecord::Outcome::error)
    fmt::format_to(std::back_inserter(line), FMT_COMPILE(" {}"), outcome);
  if (!key.empty()) fmt::format_to(std::back_inserter(line), FMT_COMPILE(" key={}"), key);
  // The wait for a slot, apart from ms: bench/fairness.sh reads it per key.
  if (record.queued > 0) {
    const long long queued = tenths(record.queued);
    fmt::format_to(std::back_inserter(line), FMT_COMPILE(" queued_ms={}.{}"), queued / 10,
                   queued % 10);
  }
  if (record.usage)
    fmt::format_to(std::back_inserter(line), FMT_COMPILE(" tokens={}+{}"),
                   record.usage->prompt_tokens, record.usage->completion_tokens);
  for (std::size_t i = 0; i < record.failed_on.size(); ++i)
    fmt::format_to(std::back_inserter(line), FMT_COMPILE("{}{}"), i == 0 ? " failed_on=" : ",",
                   record.failed_on[i]);
  if (!trace_id.empty())
    fmt::format_to(std::back_inserter(line), FMT_COMPILE(" trace={}"), trace_id);
  spdlog::info(std::string_view(line.data(), line.size()));
}

// The same fields as the text line, one JSON object (the log's formatter
// adds time and level: common/json_log.h).
void Accounting::log_json(const RequestContext& ctx, const std::string& trace_id) const {
  const auto& r = ctx.record;
  const auto& head = ctx.request.head;
  const auto ms = [](double seconds) { return std::llround(std::max(seconds, 0.0) * 1e4) / 10.0; };
  std::string target;  // the query's values left out: a value may be a secret
  std::string line = fmt::format(
      FMT_COMPILE("{{\"event\":\"access\",\"id\":{},\"method\":{},\"target\":{},\"model\":{},"
                  "\"instance\":{},\"status\":{},\"in\":{},\"out\":{},\"ttfb_ms\":{},\"ms\":{},"
                  "\"outcome\":\"{}\""),
      json_quote(r.id), json_quote(head.method), json_quote(log_target(head.target, target)),
      r.model.empty() ? std::string("null") : json_quote(r.model),
      r.instance.empty() ? std::string("null") : json_quote(r.instance), r.logged_status(),
      r.bytes_in, r.bytes_out, r.ttfb < 0 ? -1.0 : ms(r.ttfb), ms(r.seconds_since_start()),
      to_string(r.outcome()));
  if (!ctx.key_name.empty()) line += ",\"key\":" + json_quote(ctx.key_name);
  if (r.queued > 0) line += fmt::format(FMT_COMPILE(",\"queued_ms\":{}"), ms(r.queued));
  if (r.usage)
    line += fmt::format(FMT_COMPILE(",\"tokens_in\":{},\"tokens_out\":{}"), r.usage->prompt_tokens,
                        r.usage->completion_tokens);
  if (!r.failed_on.empty()) {
    line += ",\"failed_on\":[";
    for (std::size_t i = 0; i < r.failed_on.size(); ++i)
      line += (i ? "," : "") + json_quote(r.failed_on[i]);
    line += ']';
  }
  line += ",\"trace_id\":" + (trace_id.empty() ? std::string("null") : json_quote(trace_id)) + "}";
  spdlog::info(line);
}

void Accounting::refused(const http::RequestHead& head, std::string_view id, int status) const {
  std::string scratch;
  const std::string_view target = log_target(head.target, scratch);
  if (!json_log_) {
    spdlog::info("access id={} {} {} status={} refused before the body", id, head.method, target,
                 status);
    return;
  }
  spdlog::info(
      "{{\"event\":\"access\",\"id\":{},\"method\":{},\"target\":{},\"status\":{},"
      "\"outcome\":\"refused_before_body\",\"trace_id\":null}}",
      json_quote(id), json_quote(head.method), json_quote(target), status);
}

}  // namespace switchyard::gateway
