// The start line and header block of an HTTP/1.x message, written as one
// string so that a whole message goes out in a single gather write (head,
// then the body in place). Beast's serializer walks every field through a
// buffer sequence view on each write, which was the largest cost per request
// on the gateway's path (docs/performance.md).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "http/message.h"

namespace switchyard::http {

// How the body is delimited.
struct Framing {
  enum class Kind { none, length, chunked };
  Kind kind = Kind::none;
  std::size_t length = 0;

  static Framing no_body() { return {}; }
  static Framing content_length(std::size_t n) { return {Kind::length, n}; }
  static Framing chunked() { return {Kind::chunked, 0}; }
};

// 1xx, 204 and 304 responses never carry a body or its framing.
inline bool status_has_body(int status) {
  return status >= 200 && status != 204 && status != 304;
}

// "HTTP/1.1 200 OK\r\n" and the header lines, ending with the blank line.
// `version` is 10 or 11. Adds Server (when not empty), the framing header
// and the Connection header HTTP/1.x needs for `keep_alive` (close on 1.1,
// keep-alive on 1.0). Content-Length, Transfer-Encoding and Connection in
// `headers` are dropped: the framing decides them.
std::string response_head(int status, unsigned version, const Headers& headers,
                          std::string_view server, Framing framing, bool keep_alive);

// "POST /v1/chat/completions HTTP/1.1\r\n", Host, the header lines and the
// framing header, ending with the blank line. Keep-alive (HTTP/1.1's default).
std::string request_head(std::string_view method, std::string_view target, std::string_view host,
                         const Headers& headers, Framing framing);

}  // namespace switchyard::http
