// The handler's side of one HTTP exchange: how it answers, without touching
// the socket. The session that owns the connection implements it.
#pragma once

#include <boost/asio/awaitable.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "http/message.h"

namespace switchyard::http {

// Every method returns false when the client is gone (write failed or timed
// out); the handler then stops and releases what it holds.
class Exchange {
 public:
  virtual ~Exchange() = default;

  // A complete response. Call once, and not after start_stream().
  virtual boost::asio::awaitable<bool> respond(Response response) = 0;

  // A response whose body follows in chunks (Transfer-Encoding: chunked).
  virtual boost::asio::awaitable<bool> start_stream(int status, Headers headers) = 0;
  // start_stream() without a coroutine, as send_chunk_now(): what the socket
  // does not take is kept and goes before anything sent after it. For a
  // stream started from a side coroutine that may be stopped at any await.
  virtual bool start_stream_now(int status, Headers headers) = 0;
  virtual boost::asio::awaitable<bool> send_chunk(std::string_view data) = 0;
  virtual boost::asio::awaitable<bool> end_stream() = 0;
  // send_chunk() in two halves, for a relay that writes once per engine
  // read: send_chunk_now() writes what the socket takes at once and keeps
  // the rest; if then !flushed(), flush() must be awaited before anything
  // else is sent. When the socket takes it all (nearly always), no coroutine
  // is started: per relayed event that was three.
  virtual bool send_chunk_now(std::string_view data) = 0;
  virtual bool flushed() const = 0;
  virtual boost::asio::awaitable<bool> flush() = 0;

  // Completes with true when the client closes or resets its connection.
  // While the client is connected it waits until cancelled (awaitable
  // operators' `||` cancel it when the work it guards ends first), and then
  // completes with false.
  virtual boost::asio::awaitable<bool> until_client_gone() = 0;

  // Calls `on_gone` once if the client closes or resets its connection
  // before unwatch_client(); one watch at a time. Noticed at most ≈ 100 ms
  // after the call and at once after that: the watch is armed only for
  // requests that last (the server's client_watch.h says why). Cheaper than
  // racing until_client_gone() when the guarded work can be stopped from a
  // callback (an upstream call's abort()), which is why the request path
  // uses it.
  virtual void watch_client(std::function<void()> on_gone) = 0;
  virtual void unwatch_client() = 0;

  // Whether a status line has been sent.
  virtual bool started() const = 0;

  // Closes the connection at once with a TCP reset (SO_LINGER 0), whatever
  // was sent so far; the client sees a connection error, not an end of body.
  // For simulating engines that crash mid-response. Afterwards every write
  // returns false, and the session neither answers nor reuses the connection.
  virtual void abort_connection() = 0;
};

// What the server asks of the application. Implementations must not throw
// from handle(); errors are answered as responses.
class Handler {
 public:
  virtual ~Handler() = default;

  // Called when the headers are in, before the body is read, to answer early
  // (authentication, unknown path, wrong method) without reading a body that
  // will not be used. The connection closes after such an answer. It may
  // leave a note for handle() in head.screen_note.
  virtual std::optional<Response> screen(RequestHead& head) {
    (void)head;
    return std::nullopt;
  }

  // The request is the session's, lent until the returned awaitable
  // completes (the handler may move from it): a copy in the handler's frame
  // would be over 500 bytes more for every open stream.
  virtual boost::asio::awaitable<void> handle(Request& request, Exchange& exchange) = 0;

  // The body of an error the server itself detects (malformed HTTP, body over
  // the limit, timeouts), in the application's error format; `path`: the
  // request's, when its head was read (its route may speak its own format).
  virtual Response protocol_error(int status, std::string message, std::string_view path) = 0;
};

}  // namespace switchyard::http
