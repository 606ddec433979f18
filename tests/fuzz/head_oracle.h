// Beast 1.81's own parser, as an oracle for HeadParser (which replaced it):
// what each makes of a whole head, for the unit tests and the differential
// fuzz target.
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http/parsers.h"

namespace switchyard::http::head_oracle {

namespace beast_http = boost::beast::http;

// What a parser made of a head: nullopt when it did not accept it whole.
struct Head {
  std::size_t size = 0;
  std::string method, target;
  int status = 0;
  std::vector<std::pair<std::string, std::string>> fields;
  std::optional<std::uint64_t> content_length;
  bool chunked = false;
  bool keep_alive = false;
  bool has_body = false;
  bool operator==(const Head&) const = default;
};

inline std::ostream& operator<<(std::ostream& os, const std::optional<Head>& head) {
  if (!head) return os << "refused";
  os << head->size << " bytes, " << head->method << " " << head->target << " " << head->status
     << ", length " << head->content_length.value_or(-1) << (head->chunked ? ", chunked" : "")
     << (head->keep_alive ? ", keep-alive" : "") << (head->has_body ? ", body" : "");
  for (const auto& [name, value] : head->fields) os << " [" << name << ": " << value << "]";
  return os;
}

template <bool isRequest>
class BeastHead final : public beast_http::basic_parser<isRequest> {
 public:
  Head head;

 private:
  using error_code = boost::system::error_code;
  using string_view = boost::beast::string_view;
  void on_request_impl(beast_http::verb, string_view method, string_view target, int,
                       error_code&) override {
    head.method = std::string(method);
    head.target = std::string(target);
  }
  void on_response_impl(int code, string_view, int, error_code&) override { head.status = code; }
  void on_field_impl(beast_http::field, string_view name, string_view value, error_code&) override {
    head.fields.emplace_back(std::string(name), std::string(value));
  }
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(const boost::optional<std::uint64_t>&, error_code&) override {}
  std::size_t on_body_impl(string_view, error_code&) override { return 0; }
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view, error_code&) override { return 0; }
  void on_finish_impl(error_code&) override {}
};

template <bool isRequest>
std::optional<Head> beasts(std::string_view wire) {
  BeastHead<isRequest> parser;
  parser.eager(false);
  parser.body_limit(boost::none);
  boost::system::error_code ec;
  const std::size_t used = parser.put(boost::asio::buffer(wire.data(), wire.size()), ec);
  if (ec || !parser.is_header_done()) return std::nullopt;
  Head head = std::move(parser.head);
  head.size = used;
  if (auto length = parser.content_length()) head.content_length = *length;
  head.chunked = parser.chunked();
  head.keep_alive = parser.keep_alive();
  head.has_body = !parser.is_done();
  return head;
}

// What `parser`, which fills `headers`, makes of `wire`.
template <class Parser>
std::optional<Head> head_of(Parser& parser, const Headers& headers, std::string_view wire) {
  boost::system::error_code ec;
  const std::size_t used = parser.put(boost::asio::buffer(wire.data(), wire.size()), ec);
  if ((ec && ec != beast_http::error::need_more) || !parser.is_header_done()) return std::nullopt;
  Head head;
  head.size = used;
  for (const auto& [name, value] : headers) head.fields.emplace_back(name, value);
  head.content_length = parser.content_length();
  head.chunked = parser.chunked();
  head.keep_alive = parser.keep_alive();
  head.has_body = !parser.is_done();
  return head;
}

inline std::optional<Head> ours_request(std::string_view wire) {
  Request request;
  RequestParser parser(request);
  parser.body_limit(std::nullopt);
  auto head = head_of(parser, request.head.headers, wire);
  if (head) {
    head->method = request.head.method;
    head->target = request.head.target;
  }
  return head;
}

inline std::optional<Head> ours_response(std::string_view wire) {
  ResponseParser parser;
  auto head = head_of(parser, parser.headers, wire);
  if (head) head->status = parser.status();
  return head;
}

}  // namespace switchyard::http::head_oracle
