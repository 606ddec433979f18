#include "http/parsers.h"

#include <algorithm>
#include <cstring>

#include <boost/beast/http/error.hpp>

namespace switchyard::http {

namespace {

void add_header(Headers& headers, boost::beast::string_view name, boost::beast::string_view value) {
  headers.add({name.data(), name.size()}, {value.data(), value.size()});
}

}  // namespace

void RequestParser::on_request_impl(boost::beast::http::verb, string_view method_text,
                                    string_view target_text, int http_version, error_code&) {
  method.assign(method_text.data(), method_text.size());
  target.assign(target_text.data(), target_text.size());
  version = static_cast<unsigned>(http_version);
}

void RequestParser::on_field_impl(boost::beast::http::field, string_view name, string_view value,
                                  error_code&) {
  add_header(headers, name, value);
}

void RequestParser::on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) {
  // The server checked a declared length against its body limit already.
  if (length) body.reserve(static_cast<std::size_t>(*length));
}

std::size_t RequestParser::on_body_impl(string_view data, error_code&) {
  body.append(data.data(), data.size());
  return data.size();
}

std::size_t RequestParser::on_chunk_body_impl(std::uint64_t, string_view data, error_code& ec) {
  return on_body_impl(data, ec);
}

void ResponseParser::on_field_impl(boost::beast::http::field, string_view name, string_view value,
                                   error_code&) {
  add_header(headers, name, value);
}

void ResponseParser::body_into(char* data, std::size_t size) {
  out_ = data;
  room_ = size;
  filled_ = 0;
}

std::size_t ResponseParser::take(string_view data, error_code& ec) {
  const std::size_t n = std::min(data.size(), room_ - filled_);
  if (n > 0) std::memcpy(out_ + filled_, data.data(), n);
  filled_ += n;
  if (n < data.size()) ec = boost::beast::http::error::need_buffer;
  return n;
}

}  // namespace switchyard::http
