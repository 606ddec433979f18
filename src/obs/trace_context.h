// W3C Trace Context (https://www.w3.org/TR/trace-context/): trace and span
// ids and the `traceparent` header that carries them between services.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>

namespace switchyard::obs {

using TraceId = std::array<std::uint8_t, 16>;
using SpanId = std::array<std::uint8_t, 8>;

// A remote span this service continues: the client's, from its traceparent.
struct TraceParent {
  TraceId trace_id{};
  SpanId span_id{};
  bool sampled = false;
};

// Version 00's form, "00-<32 hex>-<16 hex>-<2 hex>", lower-case hex, ids not
// all zero. Anything else is ignored, as the specification asks (the
// request then starts a trace of its own).
std::optional<TraceParent> parse_traceparent(std::string_view header);
std::string format_traceparent(const TraceId& trace, const SpanId& span, bool sampled);

// Lower-case hex, as traceparent and OTLP/JSON write ids.
std::string to_hex(const TraceId& id);
std::string to_hex(const SpanId& id);

// Fresh random ids, never all zero (an all-zero id means "none").
TraceId new_trace_id(std::mt19937_64& rng);
SpanId new_span_id(std::mt19937_64& rng);

}  // namespace switchyard::obs
