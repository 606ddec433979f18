#include "http/sse.h"

#include <gtest/gtest.h>

namespace switchyard::http {
namespace {

TEST(SseSplitter, YieldsWholeEventsAcrossArbitraryPieces) {
  const std::string stream = "data: {\"a\":1}\n\ndata: {\"b\":2}\r\n\r\ndata: [DONE]\n\n";
  // Feed one byte at a time: events come out whole and in order.
  SseSplitter s;
  std::vector<std::string> events;
  for (char c : stream) {
    s.feed(std::string_view(&c, 1));
    while (auto e = s.next()) events.push_back(*e);
  }
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0], "data: {\"a\":1}\n\n");
  EXPECT_EQ(events[1], "data: {\"b\":2}\r\n\r\n");
  EXPECT_EQ(sse_data(events[2]), "[DONE]");
  EXPECT_TRUE(s.pending().empty());
}

TEST(SseSplitter, HoldsAnIncompleteEvent) {
  SseSplitter s;
  s.feed("data: {\"a\":");
  EXPECT_FALSE(s.next());
  s.feed("1}\n");
  EXPECT_FALSE(s.next());
  s.feed("\n");
  auto e = s.next();
  ASSERT_TRUE(e);
  EXPECT_EQ(sse_data(*e), "{\"a\":1}");
}

TEST(SseData, JoinsDataLinesAndIgnoresOtherFields) {
  EXPECT_EQ(sse_data("event: x\ndata: one\ndata:two\nid: 3\n\n"), "one\ntwo");
  EXPECT_EQ(sse_data(": comment\n\n"), "");
}

TEST(SseEvent, FramesAPayload) {
  EXPECT_EQ(sse_event("[DONE]"), "data: [DONE]\n\n");
}

}  // namespace
}  // namespace switchyard::http
