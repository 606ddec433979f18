#include "http/parsers.h"

#include <string_view>
#include <vector>

#include <boost/beast/http/error.hpp>

namespace switchyard::http {

std::optional<FramingError> check_request_framing(const Headers& headers, unsigned version) {
  // Most requests have no Transfer-Encoding: told by the name's bit
  // (Headers::find), without comparing every field's name twice.
  if (!headers.find("transfer-encoding")) return std::nullopt;
  std::vector<std::string_view> codings;
  for (const auto& [name, value] : headers) {
    if (!iequals(name, "transfer-encoding")) continue;
    for_each_list_element(value, [&codings](std::string_view item) {
      if (!item.empty()) codings.push_back(item);  // empty list elements are allowed
      return false;
    });
  }
  if (headers.find("content-length"))
    return FramingError{400, "Transfer-Encoding and Content-Length in one request"};
  if (version < 11) return FramingError{400, "Transfer-Encoding in an HTTP/1.0 request"};
  if (codings.empty()) return FramingError{400, "Transfer-Encoding without a coding"};
  for (std::size_t i = 0; i < codings.size(); ++i) {
    const auto coding = codings[i];
    const auto name = trim_ows(coding.substr(0, coding.find(';')));
    if (iequals(name, "chunked")) {
      if (name.size() != coding.size())
        return FramingError{400, "Transfer-Encoding: chunked takes no parameters"};
      if (i + 1 != codings.size())
        return FramingError{400, "Transfer-Encoding: chunked must be the last coding, once"};
    }
  }
  for (const auto coding : codings) {
    const auto name = trim_ows(coding.substr(0, coding.find(';')));
    if (!iequals(name, "chunked"))
      return FramingError{
          501, "Transfer-Encoding '" + std::string(name) + "' is not supported (only chunked)"};
  }
  return std::nullopt;
}

namespace {

using Error = boost::beast::http::error;

std::string_view bytes_of(boost::asio::const_buffer in) {
  return {static_cast<const char*>(in.data()), in.size()};
}

}  // namespace

std::size_t RequestParser::put(boost::asio::const_buffer in, error_code& ec) {
  const auto bytes = bytes_of(in);
  return head_.done() ? take_body(bytes, ec) : take_head(bytes, ec);
}

std::size_t RequestParser::take_head(std::string_view in, error_code& ec) {
  const std::size_t used = head_.parse(in, ec);
  if (ec) return 0;
  const auto length = head_.content_length();
  if (head_.chunked()) {
    decoder_ = BodyDecoder::chunked();
  } else if (length && *length > 0) {
    if (*length > body_limit_) {
      ec = Error::body_limit;
      return used;
    }
    decoder_ = BodyDecoder::with_length(*length);
  } else {
    done_ = true;
  }
  return used;
}

std::size_t RequestParser::take_body(std::string_view in, error_code& ec) {
  ec = {};
  // A declared length within the limit is room taken once (the server
  // answered 413 to one over it already).
  if (const auto length = head_.content_length();
      length && body_.empty() && body_limit_ != kNoLimit && *length <= body_limit_)
    body_.reserve(static_cast<std::size_t>(*length));
  std::size_t used = 0;
  while (!done_) {
    const auto step = decoder_.next(in.substr(used));
    if (decoder_.error()) {
      ec = Error::bad_chunk;
      return used;
    }
    if (step.data.size() > body_limit_ - body_.size()) {
      ec = Error::body_limit;
      return used;
    }
    body_.append(step.data);
    used += step.used;
    done_ = decoder_.done();
    if (step.used == 0) break;
  }
  if (!done_) ec = Error::need_more;
  return used;
}

void RequestParser::put_eof(error_code& ec) const {
  ec = done_ ? error_code{} : error_code{Error::partial_message};
}

std::size_t ResponseParser::put(boost::asio::const_buffer in, error_code& ec) {
  if (head_.done()) {
    ec = Error::need_buffer;
    return 0;
  }
  const std::size_t used = head_.parse(bytes_of(in), ec);
  if (ec) return 0;
  const int status = head_.status();
  const auto length = head_.content_length();
  // RFC 9112 §6.3: these have no body, whatever their fields say.
  done_ = status / 100 == 1 || status == 204 || status == 304 ||
          (!head_.chunked() && length && *length == 0);
  return used;
}

void ResponseParser::put_eof(error_code& ec) const {
  ec = head_.done() ? error_code{} : error_code{Error::partial_message};
}

bool ResponseParser::keep_alive() const {
  const bool until_close = !done_ && !head_.chunked() && !head_.content_length();
  return head_.connection_persists() && !until_close;
}

}  // namespace switchyard::http
