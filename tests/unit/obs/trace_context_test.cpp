#include "obs/trace_context.h"

#include <gtest/gtest.h>

namespace switchyard::obs {
namespace {

// The specification's example (W3C Trace Context, "traceparent Header").
constexpr std::string_view kExample = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(TraceParent, ReadsTheSpecificationsExample) {
  auto p = parse_traceparent(kExample);
  ASSERT_TRUE(p);
  EXPECT_EQ(to_hex(p->trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(to_hex(p->span_id), "00f067aa0ba902b7");
  EXPECT_TRUE(p->sampled);
  EXPECT_EQ(format_traceparent(p->trace_id, p->span_id, p->sampled), kExample);
}

TEST(TraceParent, TheSampledFlagIsBitZero) {
  auto p = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->sampled);
  EXPECT_TRUE(
      parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03")->sampled);
}

TEST(TraceParent, RefusesWhatTheSpecificationCallsInvalid) {
  for (std::string_view bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",           // no flags
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",        // upper case
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",        // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",        // zero span id
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",        // version ff
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",  // too long for 00
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",        // separator
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",        // not hex
       })
    EXPECT_FALSE(parse_traceparent(bad)) << bad;
}

TEST(TraceIds, AreFreshAndNeverZero) {
  std::mt19937_64 rng(1);
  const auto a = new_trace_id(rng), b = new_trace_id(rng);
  EXPECT_NE(a, b);
  EXPECT_NE(a, TraceId{});
  EXPECT_NE(new_span_id(rng), SpanId{});
}

}  // namespace
}  // namespace switchyard::obs
