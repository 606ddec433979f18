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

std::optional<openai::ApiError> admin_refusal(const http::RequestHead& head,
                                              std::string_view admin_key) {
  if (admin_key.empty()) {
    if (is_loopback(head.remote)) return std::nullopt;
    return openai::ApiError::forbidden(
        "the admin routes answer loopback clients only; set 'admin_key' in the fleet config to "
        "use them over the network");
  }
  const auto key = ApiKeys::presented(head.headers);
  if (!key || key->empty())
    return openai::ApiError::unauthorized(
        "the admin key is required: send 'Authorization: Bearer <admin_key>'");
  if (!constant_time_equal(*key, admin_key))
    return openai::ApiError::unauthorized("the admin key is not valid");
  return std::nullopt;
}

}  // namespace switchyard::gateway
