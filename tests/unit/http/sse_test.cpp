#include "http/sse.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace switchyard::http {
namespace {

// The events one piece completes, copied (their views end with the call).
std::vector<std::string> split(SseSplitter& s, std::string_view piece) {
  std::vector<std::string> events;
  s.split(piece, [&](std::string_view e) { events.emplace_back(e); });
  return events;
}

TEST(SseSplitter, YieldsWholeEventsAcrossArbitraryPieces) {
  const std::string stream = "data: {\"a\":1}\n\ndata: {\"b\":2}\r\n\r\ndata: [DONE]\n\n";
  // Feed one byte at a time: events come out whole and in order.
  SseSplitter s;
  std::vector<std::string> events;
  for (char c : stream) {
    for (auto& e : split(s, std::string_view(&c, 1))) events.push_back(e);
  }
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0], "data: {\"a\":1}\n\n");
  EXPECT_EQ(events[1], "data: {\"b\":2}\r\n\r\n");
  EXPECT_EQ(sse_data(events[2]), "[DONE]");
  EXPECT_TRUE(s.pending().empty());
}

TEST(SseSplitter, HoldsAnIncompleteEvent) {
  SseSplitter s;
  EXPECT_TRUE(split(s, "data: {\"a\":").empty());
  EXPECT_TRUE(split(s, "1}\n").empty());
  EXPECT_EQ(s.pending(), "data: {\"a\":1}\n");
  const auto events = split(s, "\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(sse_data(events[0]), "{\"a\":1}");
}

// The relay's common case costs no copy: an event inside one piece is a view
// of it. What a piece leaves unfinished is kept, so the piece may go.
TEST(SseSplitter, AnEventWithinOnePieceIsAViewOfIt) {
  SseSplitter s;
  std::string piece = "data: 1\n\ndata: 2\n\ndata: 3";
  std::vector<const char*> at;
  s.split(piece, [&](std::string_view e) { at.push_back(e.data()); });
  ASSERT_EQ(at.size(), 2u);
  EXPECT_EQ(at[0], piece.data());
  EXPECT_EQ(at[1], piece.data() + 9);
  piece.assign(piece.size(), '#');  // the caller reuses its buffer
  EXPECT_EQ(s.pending(), "data: 3");
  const auto events = split(s, "\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], "data: 3\n\n");
  EXPECT_TRUE(s.pending().empty());
}

TEST(SseSplitter, LooksAtEachByteAboutOnceHoweverThinTheFeed) {
  // A 10 MB event fed a byte at a time: the first splitter rescanned the
  // whole pending event for every piece (~5e13 bytes).
  constexpr std::size_t kSize = 10u << 20;
  SseSplitter s(16u << 20);
  EXPECT_TRUE(split(s, "data: ").empty());
  const char x = 'x';
  for (std::size_t i = 0; i < kSize; ++i) {
    ASSERT_TRUE(split(s, std::string_view(&x, 1)).empty());
  }
  const auto events = split(s, "\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].size(), kSize + 8);
  EXPECT_LE(s.bytes_scanned(), 2 * (kSize + 8));
  EXPECT_FALSE(s.overflowed());
}

TEST(SseSplitter, ManyEventsInOnePieceStayLinear) {
  std::string stream;
  for (int i = 0; i < 100000; ++i) stream += "data: {\"i\":1}\r\n\r\n";
  SseSplitter s;
  std::size_t events = 0;
  s.split(stream, [&](std::string_view) { ++events; });
  EXPECT_EQ(events, 100000u);
  EXPECT_LE(s.bytes_scanned(), 2 * stream.size());
  EXPECT_TRUE(s.pending().empty());
}

TEST(SseSplitter, AnEventPastTheLimitBreaksTheStream) {
  SseSplitter s(64);
  EXPECT_EQ(split(s, "data: ok\n\n").size(), 1u);
  EXPECT_TRUE(split(s, "data: " + std::string(60, 'y')).empty());
  EXPECT_TRUE(s.overflowed());
  EXPECT_TRUE(s.pending().empty());                     // its bytes are not kept
  EXPECT_TRUE(split(s, "\n\ndata: late\n\n").empty());  // nothing after the break is relayed
}

TEST(SseSplitter, ACompleteEventPastTheLimitBreaksTheStreamToo) {
  SseSplitter s(16);
  EXPECT_TRUE(split(s, "data: " + std::string(20, 'z') + "\n\n").empty());
  EXPECT_TRUE(s.overflowed());
}

TEST(SseSplitter, ABlankLineSplitAcrossPiecesIsFound) {
  // A piece's end must not skip the '\n' that may start a blank line.
  SseSplitter s;
  for (std::string_view piece : {"data: a\r", "\n", "\r"}) EXPECT_TRUE(split(s, piece).empty());
  const auto events = split(s, "\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0], "data: a\r\n\r\n");
}

// Events a caller knows at their start are skipped at the length it says,
// not searched (when they lie in the piece at hand); the events come out
// the same, in order, however the stream is cut, and what is left
// unfinished is kept.
TEST(SseSplitter, SkipsTheEventsACallerKnowsAtTheirStart) {
  const std::string known = "data: k\n\n";
  const std::string stream = known + "data: a\n\n" + known + known + "data: b\n\n" + known;
  const std::vector<std::string> expected = {known, "data: a\n\n", known,
                                             known, "data: b\n\n", known};
  for (const std::size_t cut : {std::size_t{3}, std::size_t{13}, stream.size()}) {
    SseSplitter s;
    std::vector<std::string> seen;
    int skipped = 0;
    for (std::size_t at = 0; at < stream.size(); at += cut) {
      s.split(
          std::string_view(stream).substr(at, cut),
          [&](std::string_view rest) {
            if (!rest.starts_with(known)) return std::size_t{0};
            seen.push_back(known);
            ++skipped;
            return known.size();
          },
          [&](std::string_view e) { seen.emplace_back(e); });
    }
    EXPECT_EQ(seen, expected) << "pieces of " << cut;
    EXPECT_TRUE(s.pending().empty());
    if (cut == stream.size()) {
      EXPECT_EQ(skipped, 4) << "every known event, unsearched";
    }
  }
  SseSplitter s;
  s.split(
      known + "data: par",
      [&](std::string_view rest) { return rest.starts_with(known) ? known.size() : 0; },
      [](std::string_view) {});
  EXPECT_EQ(s.pending(), "data: par");
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
