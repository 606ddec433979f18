#include "http/parsers.h"

#include <string_view>
#include <vector>

#include <boost/beast/http/error.hpp>

namespace switchyard::http {

namespace {

void add_header(Headers& headers, boost::beast::string_view name, boost::beast::string_view value) {
  headers.add({name.data(), name.size()}, {value.data(), value.size()});
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<FramingError> check_request_framing(const Headers& headers, unsigned version) {
  std::vector<std::string_view> codings;
  bool present = false;
  bool content_length = false;
  for (const auto& [name, value] : headers) {
    if (iequals(name, "content-length")) content_length = true;
    if (!iequals(name, "transfer-encoding")) continue;
    present = true;
    std::string_view list = value;
    while (!list.empty()) {
      const auto comma = list.find(',');
      const auto item = trim(list.substr(0, comma));
      if (!item.empty()) codings.push_back(item);  // empty list elements are allowed
      list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    }
  }
  if (!present) return std::nullopt;
  if (content_length)
    return FramingError{400, "Transfer-Encoding and Content-Length in one request"};
  if (version < 11) return FramingError{400, "Transfer-Encoding in an HTTP/1.0 request"};
  if (codings.empty()) return FramingError{400, "Transfer-Encoding without a coding"};
  for (std::size_t i = 0; i < codings.size(); ++i) {
    const auto coding = codings[i];
    const auto name = trim(coding.substr(0, coding.find(';')));
    if (iequals(name, "chunked")) {
      if (name.size() != coding.size())
        return FramingError{400, "Transfer-Encoding: chunked takes no parameters"};
      if (i + 1 != codings.size())
        return FramingError{400, "Transfer-Encoding: chunked must be the last coding, once"};
    }
  }
  for (const auto coding : codings) {
    const auto name = trim(coding.substr(0, coding.find(';')));
    if (!iequals(name, "chunked"))
      return FramingError{
          501, "Transfer-Encoding '" + std::string(name) + "' is not supported (only chunked)"};
  }
  return std::nullopt;
}

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
  const std::size_t n = on_body_impl(data, ec);
  chunk_left_ -= n;
  return n;
}

void ResponseParser::on_field_impl(boost::beast::http::field, string_view name, string_view value,
                                   error_code&) {
  add_header(headers, name, value);
}

std::size_t ResponseParser::on_body_impl(string_view, error_code& ec) {
  ec = boost::beast::http::error::need_buffer;
  return 0;
}

std::size_t ResponseParser::on_chunk_body_impl(std::uint64_t, string_view, error_code& ec) {
  ec = boost::beast::http::error::need_buffer;
  return 0;
}

}  // namespace switchyard::http
