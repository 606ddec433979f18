#include "http/parsers.h"

#include "http/beast_glue.h"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace switchyard::http {
namespace {

namespace beast_http = boost::beast::http;

// Feeds `wire` to `parser` in one piece; returns the bytes it used.
template <class Parser>
std::size_t feed(Parser& parser, std::string_view wire, boost::system::error_code& ec) {
  return parser.put(boost::asio::buffer(wire.data(), wire.size()), ec);
}

// Feeds `wire` to `parser` as the server does (parse_buffered): a step a
// call, for as long as there are bytes and the message is not whole.
template <class Parser>
boost::system::error_code feed_all(Parser& parser, std::string_view wire) {
  beast::flat_buffer buffer;
  buffer.commit(net::buffer_copy(buffer.prepare(wire.size()), net::buffer(wire)));
  return parse_buffered(parser, buffer);
}

TEST(RequestParser, FillsHeadHeadersAndBody) {
  Request request;
  RequestParser parser(request);
  const std::string wire =
      "POST /v1/chat/completions?x=1 HTTP/1.1\r\n"
      "Host: gw\r\n"
      "Authorization: Bearer sk-1\r\n"
      "content-type: application/json\r\n"
      "Content-Length: 11\r\n"
      "\r\n"
      "{\"a\":\"b\"}\r\n";
  const auto ec = feed_all(parser, wire);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(parser.is_done());
  EXPECT_EQ(request.head.method, "POST");
  EXPECT_EQ(request.head.target, "/v1/chat/completions?x=1");
  EXPECT_EQ(parser.version(), 11u);
  EXPECT_EQ(request.body, "{\"a\":\"b\"}\r\n");
  EXPECT_TRUE(parser.keep_alive());
  // Every header as sent, in order, names as spelled.
  const Headers& headers = request.head.headers;
  ASSERT_EQ(headers.size(), 4u);
  EXPECT_EQ(headers[2].name, "content-type");
  EXPECT_EQ(headers.find("authorization"), "Bearer sk-1");
}

TEST(RequestParser, ChunkedBodyArrivingInPieces) {
  Request request;
  RequestParser parser(request);
  const std::string head = "POST /tokenize HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n";
  boost::system::error_code ec;
  EXPECT_EQ(feed(parser, head, ec), head.size());
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(parser.version(), 10u);
  std::string rest = "4\r\nwiki\r\n5\r\npedia\r\n0\r\n\r\n";
  // One byte at a time, as a slow client sends it.
  std::string pending;
  for (char c : rest) {
    pending.push_back(c);
    ec = {};
    pending.erase(0, feed(parser, pending, ec));
    if (ec == beast_http::error::need_more) continue;
    ASSERT_FALSE(ec) << ec.message();
  }
  ASSERT_TRUE(parser.is_done());
  EXPECT_EQ(request.body, "wikipedia");
}

// A client may send its whole request a byte at a time, trailer included.
TEST(RequestParser, ChunkedBodyAndTrailerAByteAtATime) {
  for (const std::string body : {"0\r\nX-Trailer: y\r\n\r\n", "3\r\nabc\r\n0\r\n\r\n",
                                 "2\r\nab\r\n1\r\nc\r\n0\r\nA: 1\r\nB: 2\r\n\r\n"}) {
    Request request;
    RequestParser parser(request);
    beast::flat_buffer buffer;
    const std::string head = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (char c : head + body) {
      auto room = buffer.prepare(1);
      *static_cast<char*>(room.data()) = c;
      buffer.commit(1);
      ASSERT_FALSE(parse_buffered(parser, buffer)) << body;
    }
    ASSERT_TRUE(parser.is_done()) << body;
    EXPECT_EQ(request.body, body.starts_with("0") ? "" : "abc");
    EXPECT_EQ(buffer.size(), 0u);
  }
}

TEST(RequestParser, BodyLimitIsEnforced) {
  {
    Request request;
    RequestParser parser(request);
    parser.body_limit(4);
    EXPECT_EQ(feed_all(parser, "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n0123456789"),
              beast_http::error::body_limit);
  }
  // A chunked body's length is known only as it comes: its chunks count.
  Request request;
  RequestParser parser(request);
  parser.body_limit(4);
  EXPECT_EQ(feed_all(parser,
                     "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                     "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"),
            beast_http::error::body_limit);
  EXPECT_EQ(request.body, "abc");
}

TEST(RequestParser, MalformedChunkedBodyAndCutOffRequestsAreErrors) {
  {
    Request request;
    RequestParser parser(request);
    EXPECT_EQ(feed_all(parser, "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
              beast_http::error::bad_chunk);
  }
  Request request;
  RequestParser parser(request);
  ASSERT_FALSE(feed_all(parser, "POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n01234"));
  EXPECT_FALSE(parser.is_done());
  boost::system::error_code ec;
  parser.put_eof(ec);
  EXPECT_EQ(ec, beast_http::error::partial_message);
}

// Pipelined requests: each parser takes its own message and leaves the next.
TEST(RequestParser, LeavesTheNextRequestInTheBuffer) {
  const std::string first = "POST /a HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi";
  const std::string second = "GET /b HTTP/1.1\r\n\r\n";
  beast::flat_buffer buffer;
  const std::string wire = first + second;
  buffer.commit(net::buffer_copy(buffer.prepare(wire.size()), net::buffer(wire)));
  Request a;
  RequestParser pa(a);
  ASSERT_FALSE(parse_buffered(pa, buffer));
  EXPECT_EQ(a.body, "hi");
  EXPECT_EQ(buffer.size(), second.size());
  Request b;
  RequestParser pb(b);
  ASSERT_FALSE(parse_buffered(pb, buffer));
  ASSERT_TRUE(pb.is_done());
  EXPECT_EQ(b.head.target, "/b");
  EXPECT_EQ(buffer.size(), 0u);
}

// The header only: the body stays in the buffer for BodyDecoder.
TEST(ResponseParser, ReadsTheHeaderAndTakesNoBody) {
  ResponseParser parser;
  const std::string head =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
      "Content-Length: 10\r\nConnection: close\r\n\r\n";
  boost::system::error_code ec;
  EXPECT_EQ(feed(parser, head, ec), head.size());
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(parser.is_header_done());
  EXPECT_EQ(parser.status(), 503);
  EXPECT_EQ(parser.headers.find("content-type"), "application/json");
  EXPECT_EQ(parser.content_length().value_or(0), 10u);
  EXPECT_FALSE(parser.keep_alive());
  ec = {};
  EXPECT_EQ(feed(parser, "0123456789", ec), 0u);
  EXPECT_EQ(ec, beast_http::error::need_buffer);
}

Headers headers_of(std::initializer_list<std::pair<std::string_view, std::string_view>> list) {
  Headers h;
  for (auto [name, value] : list) h.add(name, value);
  return h;
}

TEST(RequestFraming, OnlyASingleFinalChunkedIsAccepted) {
  EXPECT_FALSE(check_request_framing(headers_of({{"Content-Length", "5"}}), 11));
  EXPECT_FALSE(check_request_framing(headers_of({{"Transfer-Encoding", "chunked"}}), 11));
  EXPECT_FALSE(check_request_framing(headers_of({{"transfer-encoding", " Chunked , "}}), 11));
}

struct BadFraming {
  std::vector<std::pair<std::string_view, std::string_view>> headers;
  unsigned version;
  int status;
};

class RequestFramingErrors : public testing::TestWithParam<BadFraming> {};

TEST_P(RequestFramingErrors, AreRefused) {
  Headers h;
  for (auto [name, value] : GetParam().headers) h.add(name, value);
  const auto error = check_request_framing(h, GetParam().version);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->status, GetParam().status) << error->message;
  EXPECT_FALSE(error->message.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Smuggling, RequestFramingErrors,
    testing::Values(
        BadFraming{{{"Transfer-Encoding", "xchunked"}}, 11, 501},
        BadFraming{{{"Transfer-Encoding", "gzip, chunked"}}, 11, 501},
        BadFraming{{{"Transfer-Encoding", "gzip"}, {"Transfer-Encoding", "chunked"}}, 11, 501},
        BadFraming{{{"Transfer-Encoding", "chunked, gzip"}}, 11, 400},
        BadFraming{{{"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}}, 11, 400},
        BadFraming{{{"Transfer-Encoding", "chunked;q=1"}}, 11, 400},
        BadFraming{{{"Transfer-Encoding", ""}}, 11, 400},
        BadFraming{{{"Transfer-Encoding", "chunked"}}, 10, 400},
        BadFraming{{{"Transfer-Encoding", "xchunked"}, {"Content-Length", "4"}}, 11, 400},
        BadFraming{{{"Content-Length", "4"}, {"Transfer-Encoding", "chunked"}}, 11, 400}));

}  // namespace
}  // namespace switchyard::http
