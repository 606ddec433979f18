#include "http/url.h"

#include <charconv>

#include <fmt/format.h>

namespace switchyard::http {

std::string Url::authority() const {
  return fmt::format("{}:{}", host, port);
}

Result<Url> parse_url(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return Error{fmt::format("'{}' is not a usable URL: {}", text, why)};
  };
  constexpr std::string_view scheme = "http://";
  if (text.substr(0, scheme.size()) != scheme) {
    if (text.starts_with("https://")) return bad("https is not supported; use http://");
    return bad("it must start with http://");
  }
  std::string_view rest = text.substr(scheme.size());
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);

  Url url;
  std::string_view host = authority;
  if (!authority.empty() && authority.front() == '[') {  // [::1]:8080
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return bad("unterminated IPv6 address");
    host = authority.substr(1, close - 1);
    authority.remove_prefix(close + 1);
    if (!authority.empty() && authority.front() != ':') return bad("junk after the IPv6 address");
  } else {
    host = authority.substr(0, authority.find(':'));
    authority.remove_prefix(host.size());
  }
  if (host.empty()) return bad("no host");
  if (!authority.empty()) {  // ":port"
    std::string_view port = authority.substr(1);
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535)
      return bad("the port must be a number from 1 to 65535");
    url.port = static_cast<std::uint16_t>(value);
  }
  url.host = std::string(host);
  url.path = std::string(path);
  return url;
}

}  // namespace switchyard::http
