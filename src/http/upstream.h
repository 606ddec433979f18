// The gateway's client for engines: keep-alive connections pooled per
// upstream, and a call object that sends one request and reads its response
// piece by piece, so streams are relayed as they arrive.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "http/message.h"
#include "http/url.h"

namespace switchyard::http {

struct UpstreamOptions {
  // Time to establish a TCP connection. A refused or slow connect fails fast
  // so the request can go elsewhere.
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(5)};
  // Time from sending the request to the response headers. A non-streaming
  // completion sends nothing until it is done, so this is long.
  std::chrono::milliseconds first_byte_timeout{std::chrono::seconds(600)};
  // Longest silence between two pieces of a response body (a stalled stream).
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(120)};
  // Idle keep-alive connections kept per upstream.
  std::size_t max_idle = 32;
};

struct UpstreamRequest {
  std::string method = "POST";
  std::string target;     // path and query, appended to the upstream URL's path
  Headers headers;        // end-to-end headers only; Host and Content-Length are set here
  std::string_view body;  // not copied: must outlive the call
};

struct UpstreamHead {
  int status = 0;
  Headers headers;
};

// How a call failed, for the caller's retry decision.
enum class UpstreamFailure {
  none,
  connect,   // refused, unreachable, or connect timeout: nothing was sent
  reset,     // the connection broke (reset, EOF mid-message)
  timeout,   // no headers or no body bytes within the deadline
  protocol,  // the upstream sent something that is not HTTP
  aborted,   // abort() was called
};

// Owns idle connections to one upstream. Not thread-safe: use it from one
// executor (the gateway runs one I/O thread per pool).
class UpstreamPool {
 public:
  UpstreamPool(boost::asio::any_io_executor executor, Url url, UpstreamOptions options);
  ~UpstreamPool();
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  const Url& url() const;
  const UpstreamOptions& options() const;
  // Changes options().max_idle; connections idle beyond it are closed as they return.
  void set_max_idle(std::size_t n);

  struct Connection;

 private:
  friend class UpstreamCall;
  struct State;
  std::unique_ptr<State> state_;
};

// One request/response exchange. Returns its connection to the pool when the
// response was read to the end; closes it otherwise.
class UpstreamCall {
 public:
  explicit UpstreamCall(UpstreamPool& pool);
  ~UpstreamCall();
  UpstreamCall(const UpstreamCall&) = delete;
  UpstreamCall& operator=(const UpstreamCall&) = delete;

  // Sends the request and reads the response headers. A pooled connection the
  // upstream closed meanwhile is replaced transparently.
  boost::asio::awaitable<Result<UpstreamHead>> send(const UpstreamRequest& request);

  // The next piece of the body; an empty view at its end. The view is valid
  // until the next call.
  boost::asio::awaitable<Result<std::string_view>> read_some();

  // The whole body, failing if it exceeds `limit` bytes.
  boost::asio::awaitable<Result<std::string>> read_all(std::size_t limit);

  // Closes the connection now; a pending send or read completes with an
  // error. Safe to call from another coroutine on the same executor.
  void abort();

  UpstreamFailure failure() const { return failure_; }

 private:
  struct State;
  std::unique_ptr<State> state_;
  UpstreamFailure failure_ = UpstreamFailure::none;
};

}  // namespace switchyard::http
