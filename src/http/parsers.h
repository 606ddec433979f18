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

// Beast's parser, told apart from the body bytes: where a chunked body is
// between two chunks. Beast 1.81 asserts (basic_parser.ipp:702, `n >= 5`,
// debug builds only) when it is given the final chunk in pieces of fewer than
// five bytes, as a client sending its trailer a byte at a time does; what is
// left of a chunked body between two chunks is never shorter than its last
// chunk `0\r\n\r\n`, so waiting for five bytes there (parse_buffered) waits
// for nothing that is not coming.
template <bool isRequest>
class BodyParser : public boost::beast::http::basic_parser<isRequest> {
 public:
  // The fewest buffered bytes worth giving put().
  std::size_t min_input() const {
    return this->chunked() && this->is_header_done() && chunk_left_ == 0 ? 5 : 1;
  }

 protected:
  using error_code = boost::system::error_code;
  using string_view = boost::beast::string_view;
  // Body bytes, of a chunk or not; returns how many were taken.
  virtual std::size_t on_data(string_view data, error_code& ec) = 0;

 private:
  std::size_t on_body_impl(string_view data, error_code& ec) final { return on_data(data, ec); }
  void on_chunk_header_impl(std::uint64_t size, string_view, error_code&) final {
    chunk_left_ = size;
  }
  std::size_t on_chunk_body_impl(std::uint64_t, string_view data, error_code& ec) final {
    const std::size_t n = on_data(data, ec);
    chunk_left_ -= n;
    return n;
  }

  std::uint64_t chunk_left_ = 0;  // bytes of the current chunk not yet taken
};

class RequestParser final : public BodyParser<true> {
 public:
  std::string method;
  std::string target;
  unsigned version = 11;
  Headers headers;
  std::string body;

 private:
  void on_request_impl(boost::beast::http::verb, string_view method_text, string_view target_text,
                       int http_version, error_code&) override;
  void on_response_impl(int, string_view, int, error_code&) override {}
  void on_field_impl(boost::beast::http::field, string_view name, string_view value,
                     error_code&) override;
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override;
  std::size_t on_data(string_view data, error_code&) override;
  void on_finish_impl(error_code&) override {}
};

// A response whose body is handed over piece by piece: before each read the
// caller says where the next bytes go (body_into); parsing stops with
// error::need_buffer when that space is full, as with Beast's buffer_body.
class ResponseParser final : public BodyParser<false> {
 public:
  int status = 0;
  Headers headers;

  void body_into(char* data, std::size_t size);
  // Body bytes stored since the last body_into().
  std::size_t body_bytes() const { return filled_; }

 private:
  void on_request_impl(boost::beast::http::verb, string_view, string_view, int,
                       error_code&) override {}
  void on_response_impl(int code, string_view, int, error_code&) override { status = code; }
  void on_field_impl(boost::beast::http::field, string_view name, string_view value,
                     error_code&) override;
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
  std::size_t on_data(string_view data, error_code& ec) override;
  void on_finish_impl(error_code&) override {}

  char* out_ = nullptr;
  std::size_t room_ = 0;
  std::size_t filled_ = 0;
};

}  // namespace switchyard::http
