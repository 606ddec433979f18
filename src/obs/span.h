// One finished span as OpenTelemetry models it (trace/v1/trace.proto), the
// unit the exporter queues and the OTLP encoding writes.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "obs/trace_context.h"

namespace switchyard::obs {

using AttributeValue = std::variant<std::string, std::int64_t, double, bool>;

struct Attribute {
  std::string key;
  AttributeValue value;
  bool operator==(const Attribute&) const = default;
};

// The numbers are OTLP's (Span.SpanKind, Status.StatusCode).
enum class SpanKind { internal = 1, server = 2, client = 3 };
enum class SpanStatus { unset = 0, ok = 1, error = 2 };

using SystemTime = std::chrono::system_clock::time_point;

struct SpanEvent {
  std::string name;
  SystemTime time;
};

struct Span {
  TraceId trace_id{};
  SpanId id{};
  SpanId parent{};  // all zero: a root span
  std::string name;
  SpanKind kind = SpanKind::internal;
  SystemTime start, end;
  std::vector<Attribute> attributes;
  std::vector<SpanEvent> events;
  SpanStatus status = SpanStatus::unset;
  std::string status_message;  // only with SpanStatus::error

  // The attribute named `key`, or null.
  const AttributeValue* attribute(std::string_view key) const {
    for (const auto& a : attributes)
      if (a.key == key) return &a.value;
    return nullptr;
  }
};

}  // namespace switchyard::obs
