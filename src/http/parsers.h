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

class RequestParser final : public boost::beast::http::basic_parser<true> {
 public:
  std::string method;
  std::string target;
  unsigned version = 11;
  Headers headers;
  std::string body;

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
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view data, error_code&) override;
  void on_finish_impl(error_code&) override {}
};

// A response whose body is handed over piece by piece: before each read the
// caller says where the next bytes go (body_into); parsing stops with
// error::need_buffer when that space is full, as with Beast's buffer_body.
class ResponseParser final : public boost::beast::http::basic_parser<false> {
 public:
  int status = 0;
  Headers headers;

  void body_into(char* data, std::size_t size);
  // Body bytes stored since the last body_into().
  std::size_t body_bytes() const { return filled_; }

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
  std::size_t on_body_impl(string_view data, error_code& ec) override { return take(data, ec); }
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view data, error_code& ec) override {
    return take(data, ec);
  }
  void on_finish_impl(error_code&) override {}

  std::size_t take(string_view data, error_code& ec);

  char* out_ = nullptr;
  std::size_t room_ = 0;
  std::size_t filled_ = 0;
};

}  // namespace switchyard::http
