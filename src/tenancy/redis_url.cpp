#include "tenancy/redis_url.h"

#include <charconv>

#include <fmt/format.h>

namespace switchyard::tenancy {

namespace {

bool parse_int(std::string_view text, int& out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

Result<RedisAddress> parse_redis_url(std::string_view url, std::string_view field) {
  const auto fail = [&](std::string_view why) {
    return Error{
        fmt::format("{}: '{}' {} (expected redis://host:port/db, e.g. "
                    "redis://127.0.0.1:6379/0)",
                    field, url, why)};
  };
  constexpr std::string_view scheme = "redis://";
  if (url.substr(0, scheme.size()) != scheme) {
    if (url.starts_with("rediss://")) return fail("uses TLS, which is not supported");
    return fail("does not start with redis://");
  }
  std::string_view rest = url.substr(scheme.size());
  if (rest.find('@') != std::string_view::npos)
    return fail("has credentials, which are not supported");
  RedisAddress a;
  const auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    const std::string_view db = rest.substr(slash + 1);
    if (!db.empty() && (!parse_int(db, a.db) || a.db < 0))
      return fail(fmt::format("has the database '{}', not a number from 0", db));
  }
  std::string_view port;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return fail("has an unclosed '[' in its host");
    a.host = std::string(authority.substr(1, close - 1));
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return fail("has text after its host's ']'");
      port = after.substr(1);
      if (port.empty()) return fail("has an empty port");
    }
  } else {
    const auto colon = authority.rfind(':');
    a.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) return fail("has an empty port");
    }
  }
  if (a.host.empty()) return fail("has no host");
  if (!port.empty() && (!parse_int(port, a.port) || a.port < 1 || a.port > 65535))
    return fail(fmt::format("has the port '{}', not a number from 1 to 65535", port));
  return a;
}

}  // namespace switchyard::tenancy
