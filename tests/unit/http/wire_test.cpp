#include "http/wire.h"

#include <gtest/gtest.h>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

namespace switchyard::http {
namespace {

namespace beast_http = boost::beast::http;

Headers json_headers() {
  Headers h;
  h.add("Content-Type", "application/json");
  h.add("X-Request-Id", "abc");
  return h;
}

// Parses `wire` with Beast's parser, as a client or engine on the other end would.
template <bool isRequest>
beast_http::message<isRequest, beast_http::string_body> parse(const std::string& wire) {
  beast_http::parser<isRequest, beast_http::string_body> parser;
  parser.eager(true);
  boost::system::error_code ec;
  const std::size_t used = parser.put(boost::asio::buffer(wire), ec);
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_EQ(used, wire.size());
  EXPECT_TRUE(parser.is_done());
  return parser.release();
}

TEST(Wire, ResponseHeadIsExactForACompleteBody) {
  EXPECT_EQ(response_head(200, 11, json_headers(), "switchyard", Framing::content_length(5), true),
            "HTTP/1.1 200 OK\r\n"
            "Server: switchyard\r\n"
            "Content-Type: application/json\r\n"
            "X-Request-Id: abc\r\n"
            "Content-Length: 5\r\n"
            "\r\n");
}

TEST(Wire, ResponseRoundTripsThroughBeast) {
  const std::string body = R"({"ok":true})";
  const std::string wire =
      response_head(429, 11, json_headers(), "sy", Framing::content_length(body.size()), true) +
      body;
  auto res = parse<false>(wire);
  EXPECT_EQ(res.result_int(), 429u);
  EXPECT_EQ(res.reason(), "Too Many Requests");
  EXPECT_EQ(res[beast_http::field::server], "sy");
  EXPECT_EQ(res["x-request-id"], "abc");
  EXPECT_EQ(res.body(), body);
  EXPECT_TRUE(res.keep_alive());
}

TEST(Wire, FramingAndConnectionComeFromTheArgumentsNotTheHeaders) {
  Headers h = json_headers();
  h.add("Content-Length", "999");
  h.add("connection", "keep-alive");
  h.add("Transfer-Encoding", "gzip");
  const std::string head = response_head(200, 11, h, "", Framing::content_length(2), false);
  EXPECT_EQ(head.find("999"), std::string::npos);
  EXPECT_EQ(head.find("gzip"), std::string::npos);
  EXPECT_EQ(head.find("Server:"), std::string::npos);
  auto res = parse<false>(head + "{}");
  EXPECT_FALSE(res.keep_alive());
  EXPECT_EQ(res.body(), "{}");
}

TEST(Wire, Http10KeepAliveIsExplicit) {
  auto res = parse<false>(response_head(200, 10, {}, "", Framing::content_length(0), true));
  EXPECT_EQ(res.version(), 10u);
  EXPECT_TRUE(res.keep_alive());
  const std::string closing = response_head(200, 10, {}, "", Framing::content_length(0), false);
  EXPECT_EQ(closing.find("Connection"), std::string::npos);
}

TEST(Wire, BodilessStatusesHaveNoFraming) {
  for (int status : {100, 204, 304}) {
    const std::string head =
        response_head(status, 11, json_headers(), "", Framing::content_length(7), true);
    EXPECT_EQ(head.find("Content-Length"), std::string::npos) << status;
    EXPECT_FALSE(status_has_body(status));
  }
  EXPECT_TRUE(status_has_body(200));
  EXPECT_TRUE(status_has_body(503));
}

TEST(Wire, ChunkedResponseParses) {
  const std::string wire = response_head(200, 11, json_headers(), "sy", Framing::chunked(), true) +
                           "5\r\nhello\r\n0\r\n\r\n";
  auto res = parse<false>(wire);
  EXPECT_TRUE(res.chunked());
  EXPECT_EQ(res.body(), "hello");
}

TEST(Wire, RequestRoundTripsThroughBeast) {
  const std::string body = R"({"model":"m"})";
  const std::string wire = request_head("POST", "/base/v1/chat/completions", "127.0.0.1:8081",
                                        json_headers(), Framing::content_length(body.size())) +
                           body;
  EXPECT_TRUE(
      wire.starts_with("POST /base/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8081\r\n"));
  auto req = parse<true>(wire);
  EXPECT_EQ(req.method(), beast_http::verb::post);
  EXPECT_EQ(req.target(), "/base/v1/chat/completions");
  EXPECT_EQ(req[beast_http::field::host], "127.0.0.1:8081");
  EXPECT_EQ(req[beast_http::field::content_type], "application/json");
  EXPECT_EQ(req.body(), body);
  EXPECT_TRUE(req.keep_alive());
}

TEST(Wire, RequestWithoutBodyHasNoLength) {
  const std::string wire = request_head("GET", "/health", "h:1", {}, Framing::no_body());
  EXPECT_EQ(wire, "GET /health HTTP/1.1\r\nHost: h:1\r\n\r\n");
  EXPECT_EQ(parse<true>(wire).method(), beast_http::verb::get);
}

}  // namespace
}  // namespace switchyard::http
