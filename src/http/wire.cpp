#include "http/wire.h"

// Beast 1.81's status.hpp streams a string_view without including <ostream>
// (the precompiled header hides it; the fuzz build has none).
#include <ostream>

#include <boost/beast/http/status.hpp>

#include <charconv>

namespace switchyard::http {

namespace {

void append_field(std::string& out, std::string_view name, std::string_view value) {
  out.append(name);
  out.append(": ");
  out.append(value);
  out.append("\r\n");
}

void append_number(std::string& out, std::size_t n) {
  char digits[24];
  auto [end, ec] = std::to_chars(digits, digits + sizeof digits, n);
  out.append(digits, end);
}

void append_fields(std::string& out, const Headers& headers, Framing framing) {
  for (const auto& [name, value] : headers) {
    if (iequals(name, "content-length") || iequals(name, "transfer-encoding") ||
        iequals(name, "connection"))
      continue;
    append_field(out, name, value);
  }
  switch (framing.kind) {
    case Framing::Kind::none:
      break;
    case Framing::Kind::length:
      out.append("Content-Length: ");
      append_number(out, framing.length);
      out.append("\r\n");
      break;
    case Framing::Kind::chunked:
      out.append("Transfer-Encoding: chunked\r\n");
      break;
  }
}

}  // namespace

std::string response_head(int status, unsigned version, const Headers& headers,
                          std::string_view server, Framing framing, bool keep_alive) {
  std::string out;
  out.reserve(256);
  out.append(version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ");
  append_number(out, static_cast<std::size_t>(status));
  out.push_back(' ');
  out.append(boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(status)));
  out.append("\r\n");
  if (!server.empty()) append_field(out, "Server", server);
  append_fields(out, headers, status_has_body(status) ? framing : Framing::no_body());
  if (version == 10 && keep_alive) out.append("Connection: keep-alive\r\n");
  if (version != 10 && !keep_alive) out.append("Connection: close\r\n");
  out.append("\r\n");
  return out;
}

std::string request_head(std::string_view method, std::string_view target, std::string_view host,
                         const Headers& headers, Framing framing) {
  std::string out;
  out.reserve(256);
  out.append(method);
  out.push_back(' ');
  out.append(target);
  out.append(" HTTP/1.1\r\n");
  append_field(out, "Host", host);
  append_fields(out, headers, framing);
  out.append("\r\n");
  return out;
}

}  // namespace switchyard::http
