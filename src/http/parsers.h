// HTTP/1 messages as the server and the upstream calls read them: the head
// by HeadParser, a request's body by BodyDecoder, into switchyard's own
// message types.
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "http/body_decoder.h"
#include "http/head_parser.h"
#include "http/message.h"

namespace switchyard::http {

// Why a request's framing is refused, and with which status.
struct FramingError {
  int status;  // 400, or 501 for a transfer coding the server does not decode
  std::string message;
};

// RFC 9112 §6 on the request's headers, before its body is read: the only
// Transfer-Encoding accepted is exactly `chunked`. With Content-Length too, in
// HTTP/1.0, with chunked not final, repeated or with parameters: 400; with
// any other coding (gzip, xchunked, ...): 501. Either way the body's length
// is unknown, so the caller answers and closes: reading on would run the
// body's bytes as the next request (request smuggling).
std::optional<FramingError> check_request_framing(const Headers& headers, unsigned version);

// A request: its head, and its body into a string. put() takes one step a
// call, the head or what is there of the body, and leaves what it did not
// use (the rest of a head not yet whole, the next request) to the caller.
class RequestParser {
 public:
  using error_code = boost::system::error_code;

  // Fills `request` in place (method, target, headers, body; not the head's
  // content_length or remote), which must start empty and outlive the
  // parser. Not a copy of its own: the server's session keeps the parser
  // and the request in its coroutine frame, where a second Headers would be
  // over 400 bytes more for every open connection.
  explicit RequestParser(Request& request)
      : head_(request.head.method, request.head.target, request.head.headers),
        body_(request.body) {}
  RequestParser(const RequestParser&) = delete;
  RequestParser& operator=(const RequestParser&) = delete;

  void header_limit(std::size_t bytes) { head_.header_limit(bytes); }
  // The most body bytes taken (a chunked body's; nullopt: no limit). A
  // declared Content-Length over it is refused with the head.
  void body_limit(std::optional<std::uint64_t> bytes) { body_limit_ = bytes.value_or(kNoLimit); }

  // Parses from the start of `in`; returns the bytes used. `ec` need_more:
  // call again with what is left and more; any other: the request is
  // malformed (Beast's http::error codes, which the server's answers name).
  std::size_t put(boost::asio::const_buffer in, error_code& ec);
  // The client closed its side: a request not yet whole is cut off.
  void put_eof(error_code& ec) const;

  bool got_some() const { return head_.got_some(); }
  bool is_header_done() const { return head_.done(); }
  bool is_done() const { return done_; }
  unsigned version() const { return head_.version(); }
  std::optional<std::uint64_t> content_length() const { return head_.content_length(); }
  bool chunked() const { return head_.chunked(); }
  bool keep_alive() const { return head_.connection_persists(); }

 private:
  std::size_t take_head(std::string_view in, error_code& ec);
  std::size_t take_body(std::string_view in, error_code& ec);

  static constexpr std::uint64_t kNoLimit = UINT64_MAX;

  // Small: the server's session keeps its parser for as long as the
  // connection is open, an idle stream's included.
  HeadParser head_;
  std::string& body_;
  BodyDecoder decoder_ = BodyDecoder::with_length(0);  // the body's, once the head is in
  std::uint64_t body_limit_ = 1024 * 1024;
  bool done_ = false;
};

// A response's head. Its body is not taken: BodyDecoder decodes it in place
// (body_decoder.h).
class ResponseParser {
 public:
  using error_code = boost::system::error_code;

  ResponseParser() = default;
  ResponseParser(const ResponseParser&) = delete;
  ResponseParser& operator=(const ResponseParser&) = delete;

  Headers headers;

  void header_limit(std::size_t bytes) { head_.header_limit(bytes); }
  // Parses the head from the start of `in`; returns the bytes used. Once
  // it is whole: 0 bytes, and `ec` need_buffer (the body is not taken).
  std::size_t put(boost::asio::const_buffer in, error_code& ec);
  // The upstream closed: a head not yet whole is cut off.
  void put_eof(error_code& ec) const;

  bool got_some() const { return head_.got_some(); }
  bool is_header_done() const { return head_.done(); }
  // Whether the message has no body (1xx, 204, 304, Content-Length: 0).
  bool is_done() const { return done_; }
  int status() const { return head_.status(); }
  std::optional<std::uint64_t> content_length() const { return head_.content_length(); }
  bool chunked() const { return head_.chunked(); }
  // Whether the connection may carry another exchange: not when the body
  // runs until the upstream closes.
  bool keep_alive() const;

 private:
  HeadParser head_{headers};
  bool done_ = false;
};

}  // namespace switchyard::http
