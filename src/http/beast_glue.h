// What the files inside src/http that speak Beast share: namespace names,
// the completion token, and conversions to switchyard::http types.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "http/message.h"

namespace switchyard::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace beast_http = boost::beast::http;
using net::awaitable;
using net::ip::tcp;
// Every await returns its error code as a value (no exceptions on the data path).
constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

template <class Fields>
Headers to_headers(const Fields& fields) {
  Headers h;
  h.reserve(16);
  for (const auto& f : fields) h.add(std::string(f.name_string()), std::string(f.value()));
  return h;
}

}  // namespace switchyard::http
