// Precompiled header for the targets that await I/O: Asio and Beast are large,
// and parsing them once per target instead of once per file keeps builds fast.
#pragma once

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
