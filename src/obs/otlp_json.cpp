#include "obs/otlp_json.h"

#include <cmath>

#include <fmt/compile.h>
#include <fmt/format.h>

#include "common/json_text.h"

namespace switchyard::obs {

namespace {

void append_nanos(std::string& out, SystemTime t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch());
  fmt::format_to(std::back_inserter(out), FMT_COMPILE("\"{}\""), ns.count());
}

// AnyValue: int64 as a string; a double that is not finite as the mapping's
// "NaN"/"Infinity" strings.
void append_value(std::string& out, const AttributeValue& value) {
  if (const auto* s = std::get_if<std::string>(&value)) {
    out += "{\"stringValue\":" + json_quote(*s) + "}";
  } else if (const auto* i = std::get_if<std::int64_t>(&value)) {
    fmt::format_to(std::back_inserter(out), FMT_COMPILE("{{\"intValue\":\"{}\"}}"), *i);
  } else if (const auto* d = std::get_if<double>(&value)) {
    if (std::isfinite(*d))
      fmt::format_to(std::back_inserter(out), FMT_COMPILE("{{\"doubleValue\":{}}}"), *d);
    else
      out += std::isnan(*d)
                 ? "{\"doubleValue\":\"NaN\"}"
                 : (*d > 0 ? "{\"doubleValue\":\"Infinity\"}" : "{\"doubleValue\":\"-Infinity\"}");
  } else {
    out += std::get<bool>(value) ? "{\"boolValue\":true}" : "{\"boolValue\":false}";
  }
}

void append_attributes(std::string& out, const std::vector<Attribute>& attributes) {
  out += "\"attributes\":[";
  for (std::size_t i = 0; i < attributes.size(); ++i) {
    if (i) out += ',';
    out += "{\"key\":" + json_quote(attributes[i].key) + ",\"value\":";
    append_value(out, attributes[i].value);
    out += '}';
  }
  out += ']';
}

void append_span(std::string& out, const Span& s) {
  out += "{\"traceId\":\"" + to_hex(s.trace_id) + "\",\"spanId\":\"" + to_hex(s.id) + "\"";
  if (s.parent != SpanId{}) out += ",\"parentSpanId\":\"" + to_hex(s.parent) + "\"";
  out += ",\"name\":" + json_quote(s.name);
  fmt::format_to(std::back_inserter(out), FMT_COMPILE(",\"kind\":{}"), static_cast<int>(s.kind));
  out += ",\"startTimeUnixNano\":";
  append_nanos(out, s.start);
  out += ",\"endTimeUnixNano\":";
  append_nanos(out, s.end);
  out += ',';
  append_attributes(out, s.attributes);
  if (!s.events.empty()) {
    out += ",\"events\":[";
    for (std::size_t i = 0; i < s.events.size(); ++i) {
      if (i) out += ',';
      out += "{\"timeUnixNano\":";
      append_nanos(out, s.events[i].time);
      out += ",\"name\":" + json_quote(s.events[i].name) + "}";
    }
    out += ']';
  }
  if (s.status != SpanStatus::unset) {
    fmt::format_to(std::back_inserter(out), FMT_COMPILE(",\"status\":{{\"code\":{}"),
                   static_cast<int>(s.status));
    if (!s.status_message.empty()) out += ",\"message\":" + json_quote(s.status_message);
    out += '}';
  }
  out += '}';
}

}  // namespace

std::string encode_otlp_json(const SpanSource& source, std::span<const Span> spans) {
  std::string out = "{\"resourceSpans\":[{\"resource\":{";
  append_attributes(out, source.resource);
  out += "},\"scopeSpans\":[{\"scope\":{\"name\":" + json_quote(source.scope_name);
  if (!source.scope_version.empty()) out += ",\"version\":" + json_quote(source.scope_version);
  if (!source.scope_attributes.empty()) {
    out += ',';
    append_attributes(out, source.scope_attributes);
  }
  out += "},\"spans\":[";
  for (std::size_t i = 0; i < spans.size(); ++i) {
    if (i) out += ',';
    append_span(out, spans[i]);
  }
  out += "]}]}]}";
  return out;
}

}  // namespace switchyard::obs
