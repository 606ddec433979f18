#include "gateway/accounting.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

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

namespace {

// The access line's pieces, copied into place: FMT_COMPILE's machinery for
// its dozen arguments cost some 400 instructions a request more, a
// std::string::append each (a call into libstdc++) more still
// (docs/performance.md).
class LineWriter {
 public:
  template <class... Texts>
  LineWriter& text(const Texts&... texts) {
    (put(std::string_view(texts)), ...);
    return *this;
  }
  template <class Integer>
  LineWriter& number(Integer n) {
    room(24);
    written_ =
        std::to_chars(line_.data() + written_, line_.data() + line_.size(), n).ptr - line_.data();
    return *this;
  }
  // Seconds as milliseconds with one decimal, rounded: "12.3".
  LineWriter& milliseconds(double seconds) {
    const long long tenths = std::llround(std::max(seconds, 0.0) * 1e4);
    return number(tenths / 10).text(".").number(tenths % 10);
  }
  std::string_view view() const { return {line_.data(), written_}; }

 private:
  void room(std::size_t bytes) {
    if (line_.size() - written_ < bytes) [[unlikely]]
      grow(bytes);
  }
  [[gnu::noinline]] void grow(std::size_t bytes) {
    line_.resize(std::max(2 * line_.size(), written_ + bytes));
  }
  void put(std::string_view s) {
    room(s.size());
    std::memcpy(line_.data() + written_, s.data(), s.size());
    written_ += s.size();
  }

  std::string line_ = std::string(256, ' ');
  std::size_t written_ = 0;
};

std::string_view or_dash(const std::string& s) {
  return s.empty() ? std::string_view("-") : std::string_view(s);
}

}  // namespace

void Accounting::log_line(const RequestContext& ctx, const std::string& trace_id) const {
  const auto& record = ctx.record;
  const auto& head = ctx.request.head;
  std::string target;  // the query's values left out: a value may be a secret
  LineWriter line;
  line.text("access id=", record.id, " ", head.method, " ", log_target(head.target, target))
      .text(" model=", or_dash(record.model), " instance=", or_dash(record.instance))
      .text(" status=")
      .number(record.logged_status())
      .text(" in=")
      .number(record.bytes_in)
      .text("B out=")
      .number(record.bytes_out)
      .text("B ttfb_ms=")
      .milliseconds(record.ttfb)
      .text(" ms=")
      .milliseconds(record.seconds_since_start());
  if (record.outcome() != RequestRecord::Outcome::ok &&
      record.outcome() != RequestRecord::Outcome::error)
    line.text(" ", to_string(record.outcome()));
  if (!ctx.key_name.empty()) line.text(" key=", ctx.key_name);
  // The wait for a slot, apart from ms: bench/fairness.sh reads it per key.
  if (record.queued > 0) line.text(" queued_ms=").milliseconds(record.queued);
  if (record.usage)
    line.text(" tokens=")
        .number(record.usage->prompt_tokens)
        .text("+")
        .number(record.usage->completion_tokens);
  for (std::size_t i = 0; i < record.failed_on.size(); ++i)
    line.text(i == 0 ? " failed_on=" : ",", record.failed_on[i]);
  if (!trace_id.empty()) line.text(" trace=", trace_id);
  spdlog::info(line.view());
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
