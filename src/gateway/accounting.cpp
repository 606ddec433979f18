#include "gateway/accounting.h"

#include <cmath>

#include <fmt/compile.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gateway/log_target.h"

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
  }
  return "unknown";
}

void Accounting::finish(const http::RequestHead& head, const RequestRecord& record,
                        std::string_view key) {
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
  spdlog::info(std::string_view(line.data(), line.size()));
}

}  // namespace switchyard::gateway
