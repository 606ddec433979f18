#include "obs/otlp_json.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>

#include "obs/request_trace.h"

namespace switchyard::obs {
namespace {

namespace json = boost::json;

// opentelemetry-proto's examples/trace.json: the specification's OTLP/JSON
// example of a trace request.
constexpr std::string_view kSpecExample = R"({
  "resourceSpans": [{
    "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "my.service"}}]},
    "scopeSpans": [{
      "scope": {"name": "my.library", "version": "1.0.0",
                "attributes": [{"key": "my.scope.attribute",
                                "value": {"stringValue": "some scope attribute"}}]},
      "spans": [{
        "traceId": "5B8EFFF798038103D269B633813FC60C",
        "spanId": "EEE19B7EC3C1B174",
        "parentSpanId": "EEE19B7EC3C1B173",
        "name": "I'm a server span",
        "startTimeUnixNano": 1544712660000000000,
        "endTimeUnixNano": 1544712661000000000,
        "kind": 2,
        "attributes": [{"key": "my.span.attr", "value": {"stringValue": "some value"}}]
      }]
    }]
  }]
})";

// The protobuf JSON mapping lets ids be written in either case and 64-bit
// integers as numbers or strings: compare in one form.
void normalize(json::value& v) {
  if (auto* o = v.if_object()) {
    for (auto& [key, member] : *o) {
      if ((key == "traceId" || key == "spanId" || key == "parentSpanId") && member.is_string()) {
        std::string s(member.get_string());
        std::transform(s.begin(), s.end(), s.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        member = s;
      } else if (key.ends_with("UnixNano") || key == "intValue") {
        if (member.is_string()) member = std::stoull(std::string(member.get_string()));
        member = member.to_number<std::uint64_t>();
      } else {
        normalize(member);
      }
    }
  } else if (auto* a = v.if_array()) {
    for (auto& e : *a) normalize(e);
  }
}

template <std::size_t N>
std::array<std::uint8_t, N> bytes(std::string_view hex) {
  std::array<std::uint8_t, N> out{};
  for (std::size_t i = 0; i < N; ++i)
    out[i] = static_cast<std::uint8_t>(std::stoi(std::string(hex.substr(2 * i, 2)), nullptr, 16));
  return out;
}

SystemTime at_nanos(std::int64_t ns) {
  return SystemTime(std::chrono::duration_cast<SystemTime::duration>(std::chrono::nanoseconds(ns)));
}

TEST(OtlpJson, EncodesTheSpecificationsTraceExample) {
  SpanSource source;
  source.resource = {{"service.name", std::string("my.service")}};
  source.scope_name = "my.library";
  source.scope_version = "1.0.0";
  source.scope_attributes = {{"my.scope.attribute", std::string("some scope attribute")}};
  Span s;
  s.trace_id = bytes<16>("5b8efff798038103d269b633813fc60c");
  s.id = bytes<8>("eee19b7ec3c1b174");
  s.parent = bytes<8>("eee19b7ec3c1b173");
  s.name = "I'm a server span";
  s.kind = SpanKind::server;
  s.start = at_nanos(1544712660000000000);
  s.end = at_nanos(1544712661000000000);
  s.attributes = {{"my.span.attr", std::string("some value")}};

  const std::string encoded = encode_otlp_json(source, std::span<const Span>(&s, 1));
  json::value got = json::parse(encoded), want = json::parse(kSpecExample);
  normalize(got);
  normalize(want);
  EXPECT_EQ(got, want) << encoded;
  // 64-bit integers as strings, as the mapping writes them.
  EXPECT_NE(encoded.find(R"("startTimeUnixNano":"1544712660000000000")"), std::string::npos);
}

TEST(OtlpJson, WritesEveryValueKindEventsAndAnErrorStatus) {
  Span s;
  s.trace_id = bytes<16>("0af7651916cd43dd8448eb211c80319c");
  s.id = bytes<8>("b7ad6b7169203331");
  s.name = "chat m";
  s.kind = SpanKind::client;
  s.start = at_nanos(1000);
  s.end = at_nanos(2000);
  s.attributes = {{"s", std::string("a\"b")}, {"i", std::int64_t{-7}}, {"d", 0.25}, {"b", true}};
  s.events = {{"first_token", at_nanos(1500)}};
  s.status = SpanStatus::error;
  s.status_message = "503";
  const json::value v = json::parse(encode_otlp_json({}, std::span<const Span>(&s, 1)));
  const auto& span = v.at_pointer("/resourceSpans/0/scopeSpans/0/spans/0").as_object();
  EXPECT_FALSE(span.contains("parentSpanId")) << "a root span has none";
  EXPECT_EQ(span.at("kind"), 3);
  const auto& a = span.at("attributes").as_array();
  EXPECT_EQ(a.at(0).at_pointer("/value/stringValue"), "a\"b");
  EXPECT_EQ(a.at(1).at_pointer("/value/intValue"), "-7");
  EXPECT_EQ(a.at(2).at_pointer("/value/doubleValue"), 0.25);
  EXPECT_EQ(a.at(3).at_pointer("/value/boolValue"), true);
  EXPECT_EQ(span.at("events").at(0).at("name"), "first_token");
  EXPECT_EQ(span.at("events").at(0).at("timeUnixNano"), "1500");
  EXPECT_EQ(span.at("status").at("code"), 2);
  EXPECT_EQ(span.at("status").at("message"), "503");
}

TEST(RequestTrace, ChildrenHangOffTheRootAndContinueTheClientsTrace) {
  std::mt19937_64 rng(7);
  const auto parent = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  std::optional<RequestTrace> trace(std::in_place, "/v1/chat/completions", parent, true, rng);
  {
    ScopedSpan wait(trace, "switchyard.queue_wait");
    ScopedSpan attempt(trace, "switchyard.attempt", SpanKind::client);
    attempt.fail("503");
    const std::string instance = "sim1";  // a value the span copies, keys it owns
    attempt.set("switchyard.instance", instance);
    attempt.set("http.response.status_code", std::int64_t{503});
    EXPECT_EQ(attempt.traceparent().substr(0, 36), "00-4bf92f3577b34da6a3ce929d0e0e4736-");
  }
  const auto spans = trace->take();
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(to_hex(spans[0].parent), "00f067aa0ba902b7") << "the client's span is the parent";
  for (const auto& s : spans) EXPECT_EQ(to_hex(s.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(spans[1].parent, spans[0].id);
  EXPECT_EQ(spans[2].parent, spans[0].id);
  EXPECT_EQ(spans[2].status, SpanStatus::error);
  EXPECT_EQ(spans[2].status_message, "503");
  ASSERT_NE(spans[2].attribute("switchyard.instance"), nullptr);
  EXPECT_EQ(std::get<std::string>(*spans[2].attribute("switchyard.instance")), "sim1");
  ASSERT_NE(spans[2].attribute("http.response.status_code"), nullptr);
  EXPECT_EQ(std::get<std::int64_t>(*spans[2].attribute("http.response.status_code")), 503);
  for (const auto& s : spans) EXPECT_LE(s.start, s.end) << s.name;
}

TEST(RequestTrace, ScopedSpansDoNothingWithoutATrace) {
  std::optional<RequestTrace> none;
  ScopedSpan span(none, "switchyard.attempt");
  span.set("k", std::int64_t{1});
  EXPECT_EQ(span.traceparent(), "");
}

}  // namespace
}  // namespace switchyard::obs
