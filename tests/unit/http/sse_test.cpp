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
    while (auto e = s.next()) events.emplace_back(*e);
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

TEST(SseSplitter, LooksAtEachByteAboutOnceHoweverThinTheFeed) {
  // A 10 MB event fed a byte at a time with a next() after each: the old
  // splitter rescanned the whole pending event on every call (~5e13 bytes).
  constexpr std::size_t kSize = 10u << 20;
  SseSplitter s(16u << 20);
  s.feed("data: ");
  EXPECT_FALSE(s.next());
  const char x = 'x';
  for (std::size_t i = 0; i < kSize; ++i) {
    s.feed(std::string_view(&x, 1));
    ASSERT_FALSE(s.next());
  }
  s.feed("\n\n");
  auto e = s.next();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->size(), kSize + 8);
  EXPECT_LE(s.bytes_scanned(), 2 * (kSize + 8));
  EXPECT_FALSE(s.overflowed());
}

TEST(SseSplitter, ManyEventsInOnePieceStayLinear) {
  std::string stream;
  for (int i = 0; i < 100000; ++i) stream += "data: {\"i\":1}\r\n\r\n";
  SseSplitter s;
  s.feed(stream);
  std::size_t events = 0;
  while (s.next()) ++events;
  EXPECT_EQ(events, 100000u);
  EXPECT_LE(s.bytes_scanned(), 2 * stream.size());
  EXPECT_TRUE(s.pending().empty());
}

TEST(SseSplitter, AnEventPastTheLimitBreaksTheStream) {
  SseSplitter s(64);
  s.feed("data: ok\n\n");
  ASSERT_TRUE(s.next());
  s.feed("data: " + std::string(60, 'y'));
  EXPECT_FALSE(s.next());
  EXPECT_TRUE(s.overflowed());
  EXPECT_TRUE(s.pending().empty());  // its bytes are not kept
  s.feed("\n\ndata: late\n\n");
  EXPECT_FALSE(s.next());  // nothing after the break is relayed
}

TEST(SseSplitter, ACompleteEventPastTheLimitBreaksTheStreamToo) {
  SseSplitter s(16);
  s.feed("data: " + std::string(20, 'z') + "\n\n");
  EXPECT_FALSE(s.next());
  EXPECT_TRUE(s.overflowed());
}

TEST(SseSplitter, ABlankLineSplitAcrossPiecesIsFound) {
  // A next() between pieces must not skip the '\n' that may start one.
  SseSplitter s;
  for (std::string_view piece : {"data: a\r", "\n", "\r"}) {
    s.feed(piece);
    EXPECT_FALSE(s.next());
  }
  s.feed("\n");
  auto e = s.next();
  ASSERT_TRUE(e);
  EXPECT_EQ(*e, "data: a\r\n\r\n");
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
