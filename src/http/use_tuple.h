// The completion token the project's awaits use: each returns its error code
// as a value (no exceptions on the data path).
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace switchyard::http {

inline constexpr auto use_tuple = boost::asio::as_tuple(boost::asio::use_awaitable);

}  // namespace switchyard::http
