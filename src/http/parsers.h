// Beast's HTTP/1 parser filling switchyard's own message types. Beast's
// message containers allocate a node per header, which then had to be copied
// into Headers again: both are gone from every request and response.
#pragma once

#include <boost/beast/http/basic_parser.hpp>

#include <cstddef>
#include <optional>
#include <string>

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

// A request: its header, and its body into a string. Beast 1.81 asserts
// (basic_parser.ipp:702, `n >= 5`, debug builds only) when it is given the
// final chunk in pieces of fewer than five bytes, as a client sending its
// trailer a byte at a time does; what is left of a chunked body between two
// chunks is never shorter than its last chunk `0\r\n\r\n`, so waiting for
// five bytes there (parse_buffered) waits for nothing that is not coming.
class RequestParser final : public boost::beast::http::basic_parser<true> {
 public:
  // Fills `request` in place (method, target, headers, body; not the head's
  // content_length or remote), which must start empty and outlive the
  // parser. Not a copy of its own: the server's session keeps the parser
  // and the request in its coroutine frame, where a second Headers would be
  // over 400 bytes more for every open connection.
  explicit RequestParser(Request& request)
      : method(request.head.method),
        target(request.head.target),
        headers(request.head.headers),
        body(request.body) {}

  std::string& method;
  std::string& target;
  unsigned version = 11;
  Headers& headers;
  std::string& body;

  // The fewest buffered bytes worth giving put().
  std::size_t min_input() const {
    return this->chunked() && this->is_header_done() && chunk_left_ == 0 ? 5 : 1;
  }

 private:
  using error_code = boost::system::error_code;
  using string_view = boost::beast::string_view;
  void on_request_impl(boost::beast::http::verb, string_view method_text, string_view target_text,
                       int http_version, error_code&) override;
  void on_response_impl(int, string_view, int, error_code&) override {}
  void on_field_impl(boost::beast::http::field, string_view name, string_view value,
                     error_code&) override;
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override;
  std::size_t on_body_impl(string_view data, error_code&) override;
  void on_chunk_header_impl(std::uint64_t size, string_view, error_code&) override {
    chunk_left_ = size;
  }
  std::size_t on_chunk_body_impl(std::uint64_t, string_view data, error_code& ec) override;
  void on_finish_impl(error_code&) override {}

  std::uint64_t chunk_left_ = 0;  // bytes of the current chunk not yet taken
};

// A response's header. Its body is not given to Beast: BodyDecoder decodes it
// in place (body_decoder.h), so this parser takes no body bytes.
class ResponseParser final : public boost::beast::http::basic_parser<false> {
 public:
  int status = 0;
  Headers headers;

  // The fewest buffered bytes worth giving put() (parse_buffered): any.
  std::size_t min_input() const { return 1; }

 private:
  using error_code = boost::system::error_code;
  using string_view = boost::beast::string_view;
  void on_request_impl(boost::beast::http::verb, string_view, string_view, int,
                       error_code&) override {}
  void on_response_impl(int code, string_view, int, error_code&) override { status = code; }
  void on_field_impl(boost::beast::http::field, string_view name, string_view value,
                     error_code&) override;
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
  std::size_t on_body_impl(string_view, error_code& ec) override;
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view, error_code& ec) override;
  void on_finish_impl(error_code&) override {}
};

}  // namespace switchyard::http
