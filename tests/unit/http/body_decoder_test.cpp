#include "http/body_decoder.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace switchyard::http {
namespace {

// What a connection's reader does: bytes arrive in pieces of `step` bytes
// into a buffer; whatever the decoder uses is dropped from its front.
struct Decoded {
  std::string body;
  std::vector<std::string> pieces;
  bool done = false;
  std::string error;
  std::size_t left_over = 0;  // bytes after the body, unused
};

Decoded decode(BodyDecoder decoder, std::string_view wire, std::size_t step, bool close = false) {
  Decoded out;
  std::string buffer;
  for (std::size_t at = 0; at < wire.size() && !decoder.done() && !decoder.error(); at += step) {
    buffer.append(wire.substr(at, step));
    for (;;) {
      const auto got = decoder.next(buffer);
      // A view of the buffer, never a copy.
      if (!got.data.empty()) {
        EXPECT_GE(got.data.data(), buffer.data());
        EXPECT_LE(got.data.data() + got.data.size(), buffer.data() + buffer.size());
      }
      out.body.append(got.data);
      if (!got.data.empty()) out.pieces.emplace_back(got.data);
      buffer.erase(0, got.used);
      if (got.data.empty()) break;
    }
  }
  if (close) decoder.end_of_input();
  out.done = decoder.done();
  out.error = decoder.error() ? decoder.error() : "";
  out.left_over = buffer.size();
  return out;
}

TEST(BodyDecoder, ChunksComeOutAsTheyAreWhateverThePieces) {
  const std::string wire =
      "6\r\ndata: \r\n3;name=value\r\nx\n\n\r\n"
      "A \r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n";
  for (std::size_t step = 1; step <= wire.size(); ++step) {
    const auto got = decode(BodyDecoder::chunked(), wire, step);
    EXPECT_EQ(got.body, "data: x\n\n0123456789") << "step " << step;
    EXPECT_TRUE(got.done) << "step " << step;
    EXPECT_EQ(got.error, "");
    EXPECT_EQ(got.left_over, 0u);
  }
  // All at once: one view per chunk.
  const auto whole = decode(BodyDecoder::chunked(), wire, wire.size());
  EXPECT_EQ(whole.pieces, (std::vector<std::string>{"data: ", "x\n\n", "0123456789"}));
}

TEST(BodyDecoder, StopsAtTheBodysEnd) {
  // A pipelined next response is not the body's.
  const auto chunked = decode(BodyDecoder::chunked(), "2\r\nok\r\n0\r\n\r\nHTTP/1.1", 100);
  EXPECT_TRUE(chunked.done);
  EXPECT_EQ(chunked.body, "ok");
  EXPECT_EQ(chunked.left_over, 8u);
  const auto sized = decode(BodyDecoder::with_length(5), "helloHTTP", 3);
  EXPECT_TRUE(sized.done);
  EXPECT_EQ(sized.body, "hello");
}

TEST(BodyDecoder, ALengthOfZeroIsDoneAtOnce) {
  EXPECT_TRUE(BodyDecoder::with_length(0).done());
  EXPECT_FALSE(BodyDecoder::with_length(1).done());
}

TEST(BodyDecoder, ABodyUntilCloseEndsOnlyThere) {
  auto got = decode(BodyDecoder::until_close(), "all of it", 4);
  EXPECT_EQ(got.body, "all of it");
  EXPECT_FALSE(got.done);
  got = decode(BodyDecoder::until_close(), "all of it", 4, /*close=*/true);
  EXPECT_TRUE(got.done);
}

TEST(BodyDecoder, ABodyCutOffByTheCloseIsIncomplete) {
  EXPECT_FALSE(decode(BodyDecoder::with_length(10), "short", 5, true).done);
  EXPECT_FALSE(decode(BodyDecoder::chunked(), "5\r\nhello\r\n", 5, true).done);
}

TEST(BodyDecoder, MalformedFramingIsAnErrorAndNothingAfterItIsUsed) {
  const struct {
    std::string wire;
    std::string error;
  } cases[] = {
      {"x\r\n", "a chunk size is not a hexadecimal number"},
      {"\r\n", "a chunk size is not a hexadecimal number"},
      {"12345678901234567\r\n", "a chunk size is too large"},
      {"5 garbage\r\nhello\r\n", "a chunk size is followed by something other than an extension"},
      {"5\nhello\r\n", "a chunk line does not end in CRLF"},
      {"5\r\nhelloXY0\r\n\r\n", "a chunk's data is not followed by CRLF"},
      {std::string(BodyDecoder::kMaxChunkLine + 1, '1'), "a chunk size line is too long"},
      {"1;" + std::string(BodyDecoder::kMaxChunkLine, 'e') + "\r\n",
       "a chunk size line is too long"},
      {"0\r\n" + std::string(BodyDecoder::kMaxTrailer + 1, 't'), "the trailer is too long"},
  };
  for (const auto& c : cases) {
    for (std::size_t step : {std::size_t{1}, std::size_t{7}, c.wire.size()}) {
      const auto got = decode(BodyDecoder::chunked(), c.wire, step);
      EXPECT_EQ(got.error, c.error) << c.wire.substr(0, 40) << " step " << step;
      EXPECT_FALSE(got.done);
      if (c.error == "a chunk's data is not followed by CRLF") {
        EXPECT_EQ(got.body, "hello");
      }
    }
  }
}

// A relayed stream's read is mostly one chunk, whole: one call decodes it.
TEST(BodyDecoder, AWholeChunkIsUsedWithItsCrlfInOneStep) {
  BodyDecoder decoder = BodyDecoder::chunked();
  auto step = decoder.next("5\r\nhello\r\n");
  EXPECT_EQ(step.data, "hello");
  EXPECT_EQ(step.used, 10u) << "the chunk's CRLF too";
  step = decoder.next("0\r\n\r\n");
  EXPECT_TRUE(step.data.empty());
  EXPECT_EQ(step.used, 5u);
  EXPECT_TRUE(decoder.done());
  // A CRLF not yet in is waited for as before.
  BodyDecoder cut = BodyDecoder::chunked();
  step = cut.next("5\r\nhello\r");
  EXPECT_EQ(step.data, "hello");
  EXPECT_EQ(step.used, 8u);
  EXPECT_EQ(cut.next("\r\n0\r\n\r\n").used, 7u);
  EXPECT_TRUE(cut.done());
}

// A reader need not call with nothing new (http/upstream.cpp stops there).
TEST(BodyDecoder, EmptyInputDecodesNothingWhereverTheBodyIs) {
  const std::string_view wire = "5\r\nhello\r\n0\r\nX: 1\r\n\r\n";
  for (std::size_t cut = 0; cut < wire.size(); ++cut) {
    BodyDecoder decoder = BodyDecoder::chunked();
    std::string buffer(wire.substr(0, cut)), body;
    for (auto step = decoder.next(buffer); !step.data.empty() || step.used > 0;
         step = decoder.next(buffer)) {
      body.append(step.data);
      buffer.erase(0, step.used);
    }
    const auto empty = decoder.next("");
    EXPECT_TRUE(empty.data.empty()) << "cut at " << cut;
    EXPECT_EQ(empty.used, 0u) << "cut at " << cut;
    EXPECT_EQ(decoder.error(), nullptr) << "cut at " << cut;
    buffer.append(wire.substr(cut));
    for (auto step = decoder.next(buffer); !step.data.empty() || step.used > 0;
         step = decoder.next(buffer)) {
      body.append(step.data);
      buffer.erase(0, step.used);
    }
    EXPECT_EQ(body, "hello") << "cut at " << cut;
    EXPECT_TRUE(decoder.done()) << "cut at " << cut;
  }
  for (BodyDecoder decoder : {BodyDecoder::until_close(), BodyDecoder::with_length(3)}) {
    const auto step = decoder.next("");
    EXPECT_TRUE(step.data.empty());
    EXPECT_EQ(step.used, 0u);
    EXPECT_FALSE(decoder.done());
  }
}

TEST(BodyDecoder, AHugeChunkIsHandedOutAsItArrives) {
  // Sizes up to 2^64 - 1 are taken; the data streams through in pieces.
  BodyDecoder decoder = BodyDecoder::chunked();
  auto step = decoder.next("FFFFFFFFFFFFFFFF\r\nabc");
  EXPECT_EQ(step.data, "abc");
  EXPECT_EQ(step.used, 21u);
  EXPECT_EQ(decoder.error(), nullptr);
}

}  // namespace
}  // namespace switchyard::http
