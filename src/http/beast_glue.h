// What the files inside src/http that speak Beast share: namespace names,
// the completion token, and reads and writes that skip the event loop when
// the data is already there.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http/error.hpp>

#include <cerrno>

#include "http/socket_calls.h"
#include "http/use_tuple.h"

namespace switchyard::http {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace beast_http = boost::beast::http;
using net::awaitable;
using net::ip::tcp;

// How far a read goes: the header alone (the body is read after it has been
// checked), or the whole message.
enum class ReadUntil { header, message };

template <class Parser>
bool has_read(const Parser& parser, ReadUntil until) {
  return until == ReadUntil::header ? parser.is_header_done() : parser.is_done();
}

// Whether `ec` is set and is one of `errors`. Comparing an error code with
// an enumerator costs some 50 instructions (its category made and
// compared): the clear code of nearly every call is not compared.
template <class... Errors>
bool error_is(const boost::system::error_code& ec, Errors... errors) {
  return ec && ((ec == errors) || ...);
}

// Feeds `parser` (parsers.h) what `buffer` already holds: a small message
// usually came whole with its first read. need_more and need_buffer are not
// errors here: the caller reads more (read_until), or drains the body
// buffer.
template <class Parser, class Buffer>
boost::system::error_code parse_buffered(Parser& parser, Buffer& buffer,
                                         ReadUntil until = ReadUntil::message) {
  boost::system::error_code ec;
  while (!has_read(parser, until) && buffer.size() > 0) {
    const std::size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (error_is(ec, beast_http::error::need_more, beast_http::error::need_buffer)) return {};
    if (ec || used == 0) break;
  }
  return ec;
}

// A non-blocking system call's bytes (socket_calls.h); 0 and no error in
// `ec` when the socket would block, 0 and the error when it failed.
inline std::size_t call_result(long n, boost::system::error_code& ec) {
  if (n >= 0) return static_cast<std::size_t>(n);
  if (errno != EAGAIN && errno != EWOULDBLOCK) ec.assign(errno, net::error::get_system_category());
  return 0;
}

// Reads what the socket holds now, neither waiting nor through the event
// loop; 0 bytes and no error when it holds nothing yet.
inline std::size_t read_now(tcp::socket& socket, net::mutable_buffer into,
                            boost::system::error_code& ec) {
  if (!socket.non_blocking()) socket.non_blocking(true, ec);
  if (ec || into.size() == 0) return 0;
  for (;;) {
    const long n = receive(socket.native_handle(), into.data(), into.size());
    if (n == 0) ec = net::error::eof;
    if (n >= 0 || errno != EINTR) return call_result(n, ec);
  }
}

// Parses a read's `n` bytes, or its failure: the end of the stream ends a
// message that has no length, and cuts off one that has (then `ended`: no
// read comes after it).
template <class Parser, class Buffer>
boost::system::error_code take_read(Parser& parser, Buffer& buffer, ReadUntil until,
                                    boost::system::error_code read_ec, std::size_t n, bool& ended) {
  if (error_is(read_ec, net::error::eof)) {
    ended = true;
    if (!parser.got_some()) return beast_http::error::end_of_stream;
    boost::system::error_code ec;
    parser.put_eof(ec);
    return ec;
  }
  if (read_ec) return read_ec;
  buffer.commit(n);
  return parse_buffered(parser, buffer, until);
}

// A head's (or message's) read as far as it goes without waiting: parses
// what `buffer` holds and, when the peer's answer has most likely `arrived`
// (after let_loop_run), what the socket holds now (read_now()). True when
// that settled it: the parser has read to `until`, or `ec` says why not;
// false: await read_until() for the rest. A plain call, so that a head that
// is there costs no coroutine frame, no operation, no post and no
// resumption.
template <class Parser, class Buffer>
bool read_until_now(tcp::socket& socket, Buffer& buffer, Parser& parser, ReadUntil until,
                    bool arrived, boost::system::error_code& ec) {
  ec = parse_buffered(parser, buffer, until);
  if (ec || has_read(parser, until)) return true;
  if (!arrived) return false;
  const std::size_t room = beast::read_size(buffer, 64 * 1024);
  if (room == 0) {
    ec = beast_http::error::buffer_overflow;
    return true;
  }
  boost::system::error_code read_ec;
  const std::size_t n = read_now(socket, buffer.prepare(room), read_ec);
  if (n == 0 && !read_ec) return false;
  bool ended = false;
  ec = take_read(parser, buffer, until, read_ec, n, ended);
  return ended || ec || has_read(parser, until);
}

// Reads on until `parser` has the header or the whole message, for a
// parser that needs more than `buffer` holds (read_until_now() or
// parse_buffered() said so); what came after the header stays in `buffer`.
// Beast's async_read_header, without its two composed operations stacked on
// each read (work guards, executor copies, a posted completion:
// docs/performance.md), and one coroutine frame for all the reads.
template <class Parser, class Buffer>
awaitable<boost::system::error_code> read_until(tcp::socket& socket, Buffer& buffer, Parser& parser,
                                                ReadUntil until) {
  boost::system::error_code ec;
  do {
    const std::size_t room = beast::read_size(buffer, 64 * 1024);
    if (room == 0) co_return beast_http::error::buffer_overflow;
    auto [read_ec, n] = co_await socket.async_read_some(buffer.prepare(room), use_tuple);
    bool ended = false;
    ec = take_read(parser, buffer, until, read_ec, n, ended);
    if (ended) break;
  } while (!ec && !has_read(parser, until));
  co_return ec;
}

// Writes what of `buffers` the socket's send buffer takes now (nearly always
// all of it), without waiting; returns the bytes written. Would-block is not
// an error here: the caller awaits write_rest() for what is left.
template <class Buffers>
std::size_t write_now(tcp::socket& socket, const Buffers& buffers, boost::system::error_code& ec) {
  if (!socket.non_blocking()) socket.non_blocking(true, ec);
  if (ec) return 0;
  net::detail::buffer_sequence_adapter<net::const_buffer, Buffers> pieces(buffers);
  if (pieces.all_empty()) return 0;
  for (;;) {
    const long n = send_gathered(socket.native_handle(), pieces.buffers(), pieces.count());
    if (n >= 0 || errno != EINTR) return call_result(n, ec);
  }
}

// Writes `buffers` after their first `sent` bytes, waiting for room.
template <class Buffers>
awaitable<boost::system::error_code> write_rest(tcp::socket& socket, const Buffers& buffers,
                                                std::size_t sent) {
  beast::buffers_suffix<Buffers> rest(buffers);
  rest.consume(sent);
  auto [ec, n] = co_await net::async_write(socket, rest, use_tuple);
  co_return ec;
}

// Writes all of `buffers`: first directly, which saves a trip through the
// event loop, then whatever is left asynchronously. The caller's deadline
// covers the wait. A caller on a hot path calls the two halves itself, so
// that the common case costs no coroutine frame either.
template <class Buffers>
awaitable<boost::system::error_code> write_all(tcp::socket& socket, const Buffers& buffers) {
  boost::system::error_code ec;
  const std::size_t sent = write_now(socket, buffers, ec);
  if (ec || sent == net::buffer_size(buffers)) co_return ec;
  co_return co_await write_rest(socket, buffers, sent);
}

// Lets the event loop run once: before a read that would most likely find
// nothing yet, because the peer was sent something a moment ago, or before a
// write, so that the writes of a round of ready handlers leave together.
// Use it only while other exchanges are in progress: then the answer has
// usually arrived when this resumes, and the read takes it at once instead
// of failing with EAGAIN and waiting for epoll (2 system calls fewer per
// request at 50 connections, docs/performance.md), and the peer wakes once
// for several writes. On an idle loop the detour costs more than it saves.
// An operation, not a coroutine: awaiting it costs no frame.
inline auto let_loop_run(tcp::socket& socket) {
  return net::post(socket.get_executor(), net::deferred);
}

}  // namespace switchyard::http
