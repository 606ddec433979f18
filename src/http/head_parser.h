// An HTTP/1 message head (RFC 9112 §3-§5): the request or status line and
// the header fields, parsed a line at a time as its bytes arrive, each line
// once. Beast's parser, which this replaces, hashed every field name to its
// enum and cost some 7,200 instructions for a request's and a response's
// head together, this one 4,800 (docs/performance.md): it compares a name
// only when its length is that of a field it acts on. Its rules are Beast
// 1.81's, so that what either side of the gateway accepts did not change,
// with one exception: a folded field line (obs-fold) is refused, as RFC 9112
// §5.2 allows, rather than joined.
#pragma once

#include <boost/system/error_code.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "http/message.h"

namespace switchyard::http {

class HeadParser {
 public:
  // A request's head: the request line fills `method` and `target`.
  HeadParser(std::string& method, std::string& target, Headers& headers)
      : method_(&method), target_(&target), headers_(headers) {}
  // A response's head: the status line fills status().
  explicit HeadParser(Headers& headers) : headers_(headers) {}

  // Parses the head at the start of `in`. `in` holds at least what the
  // previous call was given (the head's bytes are not taken until it is
  // whole), so no line is parsed twice. Returns the head's size, its empty
  // line included, once that line is in; until then 0, with `ec`
  // need_more, or the reason the head is malformed or too large (Beast's
  // http::error codes).
  std::size_t parse(std::string_view in, boost::system::error_code& ec);

  // The most bytes a head may have (Beast's default).
  void header_limit(std::size_t bytes) {
    header_limit_ = static_cast<std::uint32_t>(std::min<std::size_t>(bytes, UINT32_MAX));
  }

  // Whether it was given a byte, and whether the head is whole.
  bool got_some() const { return got_some_; }
  bool done() const { return done_; }
  unsigned version() const { return version_; }  // 10 or 11
  int status() const { return status_; }
  std::optional<std::uint64_t> content_length() const { return content_length_; }
  // Whether Transfer-Encoding's last coding is chunked.
  bool chunked() const { return chunked_; }
  // What the version and the Connection field say of the connection's reuse.
  bool connection_persists() const { return version_ >= 11 ? !close_ : keep_alive_; }

 private:
  boost::system::error_code parse_line(std::string_view line);
  boost::system::error_code parse_request_line(std::string_view line);
  boost::system::error_code parse_status_line(std::string_view line);
  boost::system::error_code parse_field(std::string_view line);
  boost::system::error_code note_field(std::string_view name, std::string_view value);

  std::string* method_ = nullptr;  // null for a response
  std::string* target_ = nullptr;
  Headers& headers_;
  std::optional<std::uint64_t> content_length_;
  // Offsets within a head, which is at most header_limit_ bytes.
  std::uint32_t header_limit_ = 8192;
  std::uint32_t line_start_ = 0;  // where the first line not yet parsed starts
  std::uint32_t scanned_ = 0;     // bytes searched for that line's end
  std::uint16_t version_ = 11;
  std::uint16_t status_ = 0;
  bool got_some_ = false;
  bool done_ = false;
  bool method_seen_ = false;  // a request's first space is in
  bool start_line_done_ = false;
  bool chunked_ = false;
  bool close_ = false;
  bool keep_alive_ = false;
};

}  // namespace switchyard::http
