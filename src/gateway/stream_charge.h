// What a request is charged in the ledger, today's totals and the metrics.
// A stream that runs to its end reports its usage in its last events; one
// cut short (the client left, the engine broke off, the drain ended it)
// never gets there, so its output is counted from the content events that
// were relayed to the client: engines send one token per such event.
#pragma once

#include <cstdint>
#include <optional>

#include "openai/usage.h"

namespace switchyard::gateway {

// The engine's report when it covers what was relayed (a whole stream's or
// a body's does); else the report's prompt counts, if any, with
// `relayed_tokens` as the output. None when there is neither.
std::optional<openai::Usage> charged_usage(const std::optional<openai::Usage>& reported,
                                           std::int64_t relayed_tokens);

}  // namespace switchyard::gateway
