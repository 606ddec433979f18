// The OTLP/JSON encoding of spans (opentelemetry-proto's
// ExportTraceServiceRequest under the protobuf JSON mapping, as OTLP/HTTP
// takes it at POST /v1/traces with Content-Type: application/json): ids as
// lower-case hex, enums as numbers, 64-bit integers as decimal strings.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "obs/span.h"

namespace switchyard::obs {

// Who produced the spans: the resource (service.name, ...) and the
// instrumentation scope.
struct SpanSource {
  std::vector<Attribute> resource;
  std::string scope_name;
  std::string scope_version;
  std::vector<Attribute> scope_attributes;
};

// One request body carrying `spans` (one resource, one scope).
std::string encode_otlp_json(const SpanSource& source, std::span<const Span> spans);

}  // namespace switchyard::obs
