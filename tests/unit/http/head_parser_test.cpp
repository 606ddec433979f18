// HeadParser against Beast 1.81's own parser, the one it replaced: what
// either accepts, and what it makes of it, must be the same, so that
// neither side of the gateway began to accept or refuse a head it did not.
#include "http/head_parser.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "../../fuzz/head_oracle.h"

namespace switchyard::http {
namespace {

namespace beast_http = boost::beast::http;
using head_oracle::beasts;
using head_oracle::Head;
using head_oracle::head_of;
using head_oracle::ours_request;
using head_oracle::ours_response;

// Every head here either parser might be given: well-formed ones, and one
// or two faults in each part of a head.
const std::vector<std::string> kRequests = {
    "GET / HTTP/1.1\r\n\r\n",
    "GET /v1/models?x=1 HTTP/1.1\r\nHost: gw\r\nAccept: */*\r\n\r\n",
    "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Length: 5\r\n\r\nhello",
    "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
    "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
    "POST / HTTP/1.1\r\nTransfer-Encoding: CHUNKED\r\n\r\n",
    "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
    "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n",
    "POST / HTTP/1.1\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n",
    "POST / HTTP/1.1\r\nContent-Length: 05\r\n\r\n",
    "POST / HTTP/1.1\r\nContent-Length:  7 \r\n\r\n",
    "POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n",
    "POST / HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\n",
    "POST / HTTP/1.1\r\nContent-Length: 5,\r\n\r\n",
    "POST / HTTP/1.1\r\nContent-Length:\r\n\r\n",
    "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
    "POST / HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n",
    "POST / HTTP/1.1\r\nContent-Length: 18446744073709551615\r\n\r\n",
    "POST / HTTP/1.1\r\nContent-Length: 18446744073709551616\r\n\r\n",
    "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n",
    "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
    "GET / HTTP/1.0\r\n\r\n",
    "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
    "GET / HTTP/1.1\r\nConnection: close\r\n\r\n",
    "GET / HTTP/1.1\r\nConnection: keep-alive, CLOSE\r\n\r\n",
    "GET / HTTP/1.1\r\nConnection: , close,\r\n\r\n",
    "GET / HTTP/1.1\r\nConnection: close;x\r\n\r\n",
    "GET / HTTP/1.1\r\nProxy-Connection: close\r\n\r\n",
    "GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
    "get / HTTP/1.1\r\n\r\n",
    "M-SEARCH * HTTP/1.1\r\n\r\n",
    "GE(T / HTTP/1.1\r\n\r\n",
    " / HTTP/1.1\r\n\r\n",
    "GET  HTTP/1.1\r\n\r\n",
    "GET /a b HTTP/1.1\r\n\r\n",
    "GET /\x01 HTTP/1.1\r\n\r\n",
    "GET /\x7f HTTP/1.1\r\n\r\n",
    "GET /caf\xc3\xa9 HTTP/1.1\r\n\r\n",
    "GET / HTTP/1.2\r\n\r\n",
    "GET / HTTP/2.0\r\n\r\n",
    "GET / HTTP/0.9\r\n\r\n",
    "GET / http/1.1\r\n\r\n",
    "GET / HTTP/1.1 \r\n\r\n",
    "GET / HTTP/1.1x\r\n\r\n",
    "GET / HTTP/11\r\n\r\n",
    "GET /\r\n\r\n",
    "\r\nGET / HTTP/1.1\r\n\r\n",
    "GET / HTTP/1.1\n\n",
    "GET / HTTP/1.1\r\nHost: x\n\r\n",
    "GET / HTTP/1.1\r\nHost: x\ry\r\n\r\n",
    "GET / HTTP/1.1\r\nHost : x\r\n\r\n",
    "GET / HTTP/1.1\r\n: x\r\n\r\n",
    "GET / HTTP/1.1\r\nHo(st: x\r\n\r\n",
    "GET / HTTP/1.1\r\nHost x\r\n\r\n",
    "GET / HTTP/1.1\r\nX-A:\r\n\r\n",
    "GET / HTTP/1.1\r\nX-A: \t a\tb \t\r\n\r\n",
    "GET / HTTP/1.1\r\nX-A: a\x01z\r\n\r\n",
    "GET / HTTP/1.1\r\nX-A: a\x7fz\r\n\r\n",
    std::string("GET / HTTP/1.1\r\nX-A: a\0z\r\n\r\n",
                sizeof("GET / HTTP/1.1\r\nX-A: a\0z\r\n\r\n") - 1),
    "GET / HTTP/1.1\r\nX-A: 0123456789abcdef0123456789\x1f\r\n\r\n",
    "GET / HTTP/1.1\r\nX-A: caf\xc3\xa9 \xff\r\n\r\n",
    "GET / HTTP/1.1\r\nX-Long: 0123456789abcdef0123456789abcdef0123456789abcdef\r\n\r\n",
    "GET / HTTP/1.1\r\n X-A: b\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: x\r\n",
    "GET / HTTP/1.1\r\nHost: x",
    "GET / HTT",
    "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
    "GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\n\r\n",
    "GET / HTTP/1.1\r\nX-Big: " + std::string(9000, 'a') + "\r\n\r\n",
};

const std::vector<std::string> kResponses = {
    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
    "HTTP/1.1 204 No Content\r\n\r\n",
    "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
    "HTTP/1.1 100 Continue\r\n\r\n",
    "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\n\r\n",
    "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n",
    "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n",
    "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 1\r\n\r\n",
    "HTTP/1.1 200 \r\nContent-Length: 1\r\n\r\n",
    "HTTP/1.1 200\r\nContent-Length: 1\r\n\r\n",
    "HTTP/1.1 2000 OK\r\n\r\n",
    "HTTP/1.1 20 OK\r\n\r\n",
    "HTTP/1.1 2x0 OK\r\n\r\n",
    "HTTP/1.1 200 O\tK\r\nContent-Length: 0\r\n\r\n",
    "HTTP/1.1 200 O\x01K\r\n\r\n",
    "HTTP/1.1 200 \xc3\xa9\r\nContent-Length: 0\r\n\r\n",
    "HTTP/2 200 OK\r\n\r\n",
    "HTTP/1.1  200 OK\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n",
    "HTTP/1.1 200 OK\r\nX-A: b\n\r\n",
};

TEST(HeadParser, RequestsAsBeastsParserReadsThem) {
  for (const auto& wire : kRequests) EXPECT_EQ(ours_request(wire), beasts<true>(wire)) << wire;
}

TEST(HeadParser, ResponsesAsBeastsParserReadsThem) {
  for (const auto& wire : kResponses) EXPECT_EQ(ours_response(wire), beasts<false>(wire)) << wire;
}

// Every response head a real llama-server sent (shared/reference/llamacpp):
// read as Beast read it, its framing the one the capture's body has.
TEST(HeadParser, ReadsARealLlamaServersHeads) {
  const std::filesystem::path dir = SWITCHYARD_SHARED_DIR "/reference/llamacpp";
  std::size_t read = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".headers") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string wire((std::istreambuf_iterator<char>(in)), {});
    const auto ours = ours_response(wire);
    ASSERT_TRUE(ours) << entry.path();
    EXPECT_EQ(ours, beasts<false>(wire)) << entry.path();
    EXPECT_EQ(ours->size, wire.size()) << entry.path();
    EXPECT_TRUE(ours->chunked || ours->content_length) << entry.path();
    // llama-server's error answers close the connection (as captured).
    EXPECT_EQ(ours->keep_alive, wire.find("Connection: close") == std::string::npos)
        << entry.path();
    ++read;
  }
  EXPECT_GE(read, 15u);
}

// A head that comes in pieces is read as the whole one: nothing is
// accepted before its empty line, and no line is lost between calls.
TEST(HeadParser, AHeadInPiecesIsTheWholeHead) {
  for (const auto& wire : kRequests) {
    const auto whole = ours_request(wire);
    Request request;
    RequestParser parser(request);
    parser.body_limit(std::nullopt);
    std::optional<Head> pieced;
    for (std::size_t n = 1; n <= wire.size() && !pieced; ++n) {
      boost::system::error_code ec;
      parser.put(boost::asio::buffer(wire.data(), n), ec);
      if (ec && ec != beast_http::error::need_more) break;
      if (parser.is_header_done()) pieced = head_of(parser, request.head.headers, "");
    }
    EXPECT_EQ(pieced.has_value(), whole.has_value()) << wire;
    if (pieced && whole) {
      EXPECT_EQ(pieced->fields, whole->fields) << wire;
    }
  }
}

// Where the two differ on purpose: a folded line (obs-fold) is refused,
// where Beast joined it to the line before (RFC 9112 §5.2 allows either).
TEST(HeadParser, RefusesFoldedLines) {
  const std::string folded = "GET / HTTP/1.1\r\nX-A: one\r\n two\r\n\r\n";
  EXPECT_TRUE(beasts<true>(folded));
  EXPECT_FALSE(ours_request(folded));
  EXPECT_FALSE(ours_response("HTTP/1.1 200 OK\r\nX-A: one\r\n\ttwo\r\nContent-Length: 0\r\n\r\n"));
}

TEST(HeadParser, SaysWhyAndTellsANonHttpClientAtOnce) {
  Headers headers;
  std::string method, target;
  HeadParser parser(method, target, headers);
  boost::system::error_code ec;
  // A TLS client's first bytes: refused before any line has ended.
  EXPECT_EQ(parser.parse("\x16\x03\x01", ec), 0u);
  EXPECT_EQ(ec, beast_http::error::bad_method);

  HeadParser limited(method, target, headers);
  limited.header_limit(32);
  EXPECT_EQ(limited.parse("GET / HTTP/1.1\r\nX-Long: 0123456789abcdef", ec), 0u);
  EXPECT_EQ(ec, beast_http::error::header_limit);
}

}  // namespace
}  // namespace switchyard::http
