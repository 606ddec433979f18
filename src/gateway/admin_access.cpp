#include "gateway/admin_access.h"

#include <boost/asio/ip/address.hpp>

#include <random>

#include <fmt/format.h>

#include "common/constant_time.h"
#include "gateway/api_keys.h"

namespace switchyard::gateway {

using openai::ApiError;

namespace {

// "host:port", "[v6]:port", "host" or "v6" → the host, without brackets.
std::string_view host_part(std::string_view authority) {
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    return close == std::string_view::npos ? authority : authority.substr(1, close - 1);
  }
  const auto colon = authority.find(':');
  if (colon != std::string_view::npos && authority.find(':', colon + 1) == std::string_view::npos)
    return authority.substr(0, colon);
  return authority;  // no port, or a bare IPv6 address
}

bool is_ip_address(std::string_view host) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(std::string(host), ec);
  return !ec;
}

std::string random_ticket() {
  std::random_device entropy;  // getrandom(2) on Linux
  std::string out;
  for (int i = 0; i < 8; ++i) out += fmt::format("{:08x}", entropy());  // 256 bits
  return out;
}

}  // namespace

std::string AdminTickets::issue(Clock::time_point now) {
  std::erase_if(expiry_, [now](const auto& e) { return e.second <= now; });
  while (expiry_.size() >= capacity_) {
    auto oldest = expiry_.begin();
    for (auto it = expiry_.begin(); it != expiry_.end(); ++it)
      if (it->second < oldest->second) oldest = it;
    expiry_.erase(oldest);
  }
  std::string ticket = random_ticket();
  expiry_[tenancy::sha256(ticket)] = now + lifetime_;
  return ticket;
}

bool AdminTickets::valid(std::string_view ticket, Clock::time_point now) const {
  if (ticket.empty()) return false;
  // Looked up by digest: the time a lookup takes tells nothing of a ticket.
  const auto it = expiry_.find(tenancy::sha256(ticket));
  return it != expiry_.end() && it->second > now;
}

std::vector<std::string> AdminTickets::set_cookies(std::string_view ticket) const {
  std::vector<std::string> out;
  for (const char* path : {"/admin", "/models"})
    out.push_back(fmt::format("{}={}; Path={}; Max-Age={}; HttpOnly; SameSite=Strict", cookie,
                              ticket, path, lifetime_.count()));
  return out;
}

std::optional<std::string_view> AdminTickets::presented(const http::Headers& headers) {
  auto header = headers.find("cookie");
  if (!header) return std::nullopt;
  std::string_view rest = *header;
  while (!rest.empty()) {
    const auto semi = std::min(rest.find(';'), rest.size());
    std::string_view pair = rest.substr(0, semi);
    rest.remove_prefix(std::min(semi + 1, rest.size()));
    while (pair.starts_with(' ')) pair.remove_prefix(1);
    if (pair.size() > cookie.size() && pair.starts_with(cookie) && pair[cookie.size()] == '=')
      return pair.substr(cookie.size() + 1);
  }
  return std::nullopt;
}

bool is_loopback(std::string_view remote) {
  const auto colon = remote.rfind(':');
  if (colon == std::string_view::npos) return false;
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(std::string(remote.substr(0, colon)), ec);
  if (ec) return false;
  if (address.is_v6() && address.to_v6().is_v4_mapped())
    address = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, address.to_v6());
  return address.is_loopback();
}

std::optional<ApiError> admin_refusal(const http::RequestHead& head, std::string_view admin_key,
                                      const AdminTickets* tickets,
                                      AdminTickets::Clock::time_point now) {
  if (admin_key.empty()) {
    if (is_loopback(head.remote)) return std::nullopt;
    return ApiError::forbidden(
        "the admin routes answer loopback clients only; set 'admin_key' in the fleet config to "
        "use them over the network");
  }
  const auto key = ApiKeys::presented(head.headers);
  if (key && !key->empty())
    return constant_time_equal(*key, admin_key)
               ? std::nullopt
               : std::optional(ApiError::unauthorized("the admin key is not valid"));
  if (const auto ticket = tickets ? AdminTickets::presented(head.headers) : std::nullopt)
    return tickets->valid(*ticket, now)
               ? std::nullopt
               : std::optional(ApiError::unauthorized(
                     "the dashboard login has expired: log in again with the admin key"));
  return ApiError::unauthorized(
      "the admin key is required: send 'Authorization: Bearer <admin_key>'");
}

std::optional<ApiError> host_refusal(const http::RequestHead& head, std::string_view listen,
                                     const std::vector<std::string>& admin_hosts) {
  const auto header = head.headers.find("host");
  if (!header) return std::nullopt;
  const std::string_view host = host_part(*header);
  const auto named = [host](std::string_view name) { return http::iequals(host, name); };
  if (is_ip_address(host) || named("localhost") || named(host_part(listen))) return std::nullopt;
  for (const auto& h : admin_hosts)
    if (named(h)) return std::nullopt;
  return ApiError::forbidden(fmt::format(
      "the admin routes do not answer for Host '{}' (a guard against DNS rebinding); list the "
      "name in 'admin_hosts' in the fleet config to use it",
      *header));
}

std::optional<ApiError> cross_origin_refusal(const http::RequestHead& head) {
  if (head.method == "GET" || head.method == "HEAD") return std::nullopt;
  if (const auto site = head.headers.find("sec-fetch-site");
      site && *site != "same-origin" && *site != "none")
    return ApiError::forbidden(fmt::format(
        "the admin routes refuse changes sent by another site's page (Sec-Fetch-Site: {})", *site));
  if (const auto origin = head.headers.find("origin")) {
    const auto scheme = origin->find("://");
    const auto host = head.headers.find("host");
    if (scheme == std::string_view::npos || !host ||
        !http::iequals(origin->substr(scheme + 3), *host))
      return ApiError::forbidden(fmt::format(
          "the admin routes refuse changes sent by another origin's page (Origin: {})", *origin));
  }
  const auto type = head.headers.find("content-type");
  const std::string_view json = "application/json";
  if (!type || type->size() < json.size() || !http::iequals(type->substr(0, json.size()), json) ||
      (type->size() > json.size() && (*type)[json.size()] != ';'))
    return ApiError{415,
                    "the admin routes take changes as JSON: send 'Content-Type: application/json'",
                    "invalid_request_error",
                    {},
                    {}};
  return std::nullopt;
}

void add_page_headers(http::Headers& headers) {
  headers.add("Content-Security-Policy",
              "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
              "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; "
              "base-uri 'none'; form-action 'self'");
  headers.add("X-Frame-Options", "DENY");
  headers.add("X-Content-Type-Options", "nosniff");
  headers.add("Referrer-Policy", "no-referrer");
}

}  // namespace switchyard::gateway
