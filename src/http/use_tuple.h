// The completion token the project's awaits use: each returns its error code
// as a value (no exceptions on the data path). `co_await` takes the deferred
// operation itself (Asio's awaitable_async_op), so an await allocates no
// coroutine frame for the operation's initiation, as use_awaitable's does
// (docs/performance.md). Only an operation awaited on the spot takes it: an
// awaitable<> to combine (the `||` operators) still wants use_awaitable.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>

namespace switchyard::http {

inline constexpr auto use_tuple = boost::asio::as_tuple(boost::asio::deferred);

}  // namespace switchyard::http
