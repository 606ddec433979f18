#include "gateway/admin_access.h"

#include <boost/asio/ip/address.hpp>

#include "common/constant_time.h"
#include "gateway/api_keys.h"

namespace switchyard::gateway {

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

std::optional<std::string> query_parameter(std::string_view target, std::string_view name) {
  const auto q = target.find('?');
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    const auto amp = query.find('&');
    const auto pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) != name) continue;
    const auto raw = eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
    std::string value;
    const auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '+') {
        value += ' ';
      } else if (raw[i] == '%' && i + 2 < raw.size() && hex(raw[i + 1]) >= 0 &&
                 hex(raw[i + 2]) >= 0) {
        value += static_cast<char>(hex(raw[i + 1]) * 16 + hex(raw[i + 2]));
        i += 2;
      } else {
        value += raw[i];
      }
    }
    return value;
  }
  return std::nullopt;
}

std::optional<openai::ApiError> admin_refusal(const http::RequestHead& head,
                                              std::string_view admin_key, bool key_in_query) {
  if (admin_key.empty()) {
    if (is_loopback(head.remote)) return std::nullopt;
    return openai::ApiError::forbidden(
        "the admin routes answer loopback clients only; set 'admin_key' in the fleet config to "
        "use them over the network");
  }
  std::optional<std::string> key;
  if (auto presented = ApiKeys::presented(head.headers)) key = std::string(*presented);
  if ((!key || key->empty()) && key_in_query) key = query_parameter(head.target, "key");
  if (!key || key->empty())
    return openai::ApiError::unauthorized(
        "the admin key is required: send 'Authorization: Bearer <admin_key>'");
  if (!constant_time_equal(*key, admin_key))
    return openai::ApiError::unauthorized("the admin key is not valid");
  return std::nullopt;
}

}  // namespace switchyard::gateway
