// The gateway's client for engines: keep-alive connections pooled per
// upstream, and a call object that sends one request and reads its response
// piece by piece, so streams are relayed as they arrive.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
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
  // How long a pooled connection is reused after its last response when the
  // upstream does not say (no `Keep-Alive: timeout=N`). llama-server
  // (cpp-httplib) and vLLM (uvicorn) both close idle connections after 5 s,
  // uvicorn without saying so; 4 s stays clear of that with a second's margin
  // for the request in flight. Longer saves reconnects to engines that keep
  // connections longer, at the risk of writing to one just closed (which is
  // then retried once on a new connection, costing a round trip).
  std::chrono::milliseconds idle_lifetime{std::chrono::seconds(4)};
  // How long a read of a body waits before it looks whether the engine
  // closed the connection along with the last bytes it sent (which wakes
  // no read: http/block_read.h). An engine that dies mid-body is seen this
  // late at worst.
  std::chrono::milliseconds close_check_after{std::chrono::seconds(1)};
  // The clock idle lifetimes are measured on; tests put a fake one here.
  std::chrono::steady_clock::time_point (*now)() = &std::chrono::steady_clock::now;
};

// Bytes of buffered (non-streamed) response bodies that all calls sharing it
// may hold at once, so that a few huge responses cannot take the gateway's
// memory (each is also bounded by read_all's own limit). Thread-safe.
class BufferBudget {
 public:
  // The gateway's default: two responses at read_all's usual 256 MiB limit.
  static constexpr std::size_t kDefaultTotal = std::size_t(512) << 20;

  explicit BufferBudget(std::size_t total = kDefaultTotal) : total_(total) {}
  BufferBudget(const BufferBudget&) = delete;
  BufferBudget& operator=(const BufferBudget&) = delete;

  std::size_t total() const { return total_; }
  std::size_t used() const { return used_.load(std::memory_order_relaxed); }
  // Takes `n` bytes if they fit, else takes nothing and returns false.
  bool try_take(std::size_t n);
  void give_back(std::size_t n);

 private:
  const std::size_t total_;
  std::atomic<std::size_t> used_{0};
};

// What a response's `Keep-Alive: timeout=N, max=M` header says (RFC 2068
// 19.7.1.1; sent by cpp-httplib, Apache, nginx). `max` counts this response's
// request too: max=1 means the upstream takes no further request.
struct KeepAliveHint {
  std::optional<std::chrono::seconds> timeout;
  std::optional<unsigned> max;
};
// Unknown parameters and malformed values are ignored, as if absent.
KeepAliveHint parse_keep_alive(std::string_view value);

struct UpstreamRequest {
  std::string method = "POST";
  std::string target;     // path and query, appended to the upstream URL's path
  Headers headers;        // end-to-end headers only; Host and Content-Length are set here
  std::string_view body;  // not copied: must outlive the call
};

// Pieces of a response body, in order.
using BodyPieces = std::span<const std::string_view>;

// Takes a read's pieces where the read completes, without resuming its
// caller: a stream's relay runs no coroutine per token (read_some(sink)).
class PieceSink {
 public:
  // Whether the next read follows at once; false: read_some() completes
  // with these pieces, taken already. `now`: when the read completed (the
  // clock read once for the sink and the call's next deadlines). Must not
  // throw.
  virtual bool take(BodyPieces pieces, std::chrono::steady_clock::time_point now) = 0;

 protected:
  ~PieceSink() = default;
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
  protocol,  // the upstream sent something that is not HTTP, or too big a body
  aborted,   // abort() was called
  // This process ran short of a resource (file descriptors, socket buffers,
  // memory, local ports, or the BufferBudget): not the upstream's fault, so
  // it must not count against the upstream's health.
  local,
};

// Owns idle connections to one upstream. Not thread-safe: use it from one
// executor (the gateway runs one I/O thread per pool). A connection is reused
// only while the upstream will still accept a request on it: within its
// idle lifetime (the response's Keep-Alive timeout less a margin, else
// options().idle_lifetime) and its Keep-Alive max; expired ones are closed.
// Calls may outlive the pool (coroutine frames destroyed after their owner
// at shutdown): they then return nothing to it.
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

  // Idle connections held now (expired ones are closed at the next checkout
  // or return).
  std::size_t idle_count() const;

  struct Connection;

 private:
  friend class UpstreamCall;
  struct State;
  std::shared_ptr<State> state_;
};

// One request/response exchange. Returns its connection to the pool when the
// response was read to the end; closes it otherwise.
class UpstreamCall {
 public:
  explicit UpstreamCall(UpstreamPool& pool);
  ~UpstreamCall();
  UpstreamCall(const UpstreamCall&) = delete;
  UpstreamCall& operator=(const UpstreamCall&) = delete;

  // Sends the request and reads the response headers. A pooled connection
  // that fails before any response byte (the upstream closed it while idle)
  // is replaced by a newly opened one transparently: that is no failure.
  // Only a failure on a newly opened connection is reported.
  boost::asio::awaitable<Result<UpstreamHead>> send(const UpstreamRequest& request);

  // The body bytes that came next, as views of the connection's read buffer
  // (a chunked body's chunks are not contiguous there); no views at the
  // body's end. The views, and the span holding them, are valid until the
  // caller next calls or suspends: every call of a thread shares the span.
  // `co_await call.read_some()` takes the operation itself, which costs no
  // coroutine frame (a stream reads once a token).
  struct ReadSomeOp;
  ReadSomeOp read_some();
  // As read_some(), but each read's pieces go to `sink` first, and while it
  // takes them the call reads on: completes with the pieces `sink` stopped
  // at (taken), the body's end or a failure, which `sink` does not see.
  ReadSomeOp read_some(PieceSink& sink);

  // The whole body, failing if it exceeds `limit` bytes (failure() protocol)
  // or, with a `budget`, if the budget has no room for it (failure() local).
  // The body's bytes stay charged to the budget until this call is
  // destroyed, since its caller typically still holds the body meanwhile.
  boost::asio::awaitable<Result<std::string>> read_all(
      std::size_t limit, std::shared_ptr<BufferBudget> budget = nullptr);

  // Closes the connection now; a pending send or read completes with an
  // error. Safe to call from another coroutine on the same executor.
  void abort();

  UpstreamFailure failure() const { return failure_; }

 private:
  // What the buffer holds, decoded (read_some()'s answer without a read);
  // nullopt when the socket must be read first. A plain call: most bodies
  // come whole with their head, and read_all() then starts no coroutine.
  std::optional<Result<BodyPieces>> buffered();
  // A read's failure; `detail`, when given, says what was wrong instead of
  // the error code's message.
  Error read_failed(const boost::system::error_code& ec, const char* detail = nullptr);
  // read_some()'s reader (upstream.cpp), started for the handler that
  // `co_await` gives the operation (instantiated there for that type only).
  struct ReadSome;
  template <class Handler>
  void start_read_some(Handler handler, PieceSink* sink);

  struct State;
  std::unique_ptr<State> state_;
  UpstreamFailure failure_ = UpstreamFailure::none;
};

struct UpstreamCall::ReadSomeOp {
  using Signature = void(Result<BodyPieces>);
  UpstreamCall& call;
  PieceSink* sink;
  template <boost::asio::completion_token_for<Signature> Token>
  auto operator()(Token&& token) && {
    return boost::asio::async_initiate<Token, Signature>(
        [](auto handler, UpstreamCall* c, PieceSink* s) {
          c->start_read_some(std::move(handler), s);
        },
        token, &call, sink);
  }
};

inline UpstreamCall::ReadSomeOp UpstreamCall::read_some() {
  return ReadSomeOp{*this, nullptr};
}
inline UpstreamCall::ReadSomeOp UpstreamCall::read_some(PieceSink& sink) {
  return ReadSomeOp{*this, &sink};
}

}  // namespace switchyard::http
