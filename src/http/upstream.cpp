#include "http/upstream.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include <boost/asio/execution_context.hpp>

#include <fmt/format.h>

#include "http/beast_glue.h"
#include "http/block_read.h"
#include "http/body_decoder.h"
#include "http/parsers.h"
#include "http/read_buffer.h"
#include "http/socket_deadline.h"
#include "http/wire.h"

namespace switchyard::http {

using Clock = std::chrono::steady_clock;

bool BufferBudget::try_take(std::size_t n) {
  std::size_t used = used_.load(std::memory_order_relaxed);
  do {
    if (n > total_ - used) return false;
  } while (!used_.compare_exchange_weak(used, used + n, std::memory_order_relaxed));
  return true;
}

void BufferBudget::give_back(std::size_t n) {
  used_.fetch_sub(n, std::memory_order_relaxed);
}

namespace {

std::optional<unsigned> parse_count(std::string_view s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  unsigned n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return n;
}

}  // namespace

KeepAliveHint parse_keep_alive(std::string_view value) {
  KeepAliveHint hint;
  for_each_list_element(value, [&hint](std::string_view param) {
    const auto eq = param.find('=');
    if (eq == std::string_view::npos) return false;
    const std::string_view name = trim_ows(param.substr(0, eq));
    const auto n = parse_count(trim_ows(param.substr(eq + 1)));
    if (!n) return false;
    if (iequals(name, "timeout")) hint.timeout = std::chrono::seconds(*n);
    if (iequals(name, "max")) hint.max = *n;
    return false;
  });
  return hint;
}

struct UpstreamPool::Connection {
  // Room for a whole small response in the first read (Beast reads at most
  // 512 bytes into an empty buffer: two reads for a typical completion).
  // Given back while a body's next bytes are awaited with none held
  // (read_some's block read), so an open stream whose engine is silent
  // holds none.
  explicit Connection(net::any_io_executor ex)
      : socket(ex), deadline(ex, [this] { close(); }), close_check(ex, [this] { check_close(); }) {
    buffer.reserve(kReadBlock);
  }
  void close() {
    boost::system::error_code ec;
    socket.close(ec);
  }
  // The read waiting for the engine's next bytes is ended (cancel), to be
  // read again at once, when the socket shows a close or bytes.
  void check_close() {
    if (!socket.peer_closed_or_sent()) return;
    read_now = true;
    boost::system::error_code ec;
    socket.cancel(ec);
  }
  BlockReadSocket socket;
  // Closes the socket when an operation overruns, as Beast's tcp_stream did.
  SocketDeadline deadline;
  // A body read after one that emptied the socket waits for its next edge,
  // and an engine's close that came with its last bytes makes none (an
  // engine that died mid-body): a read that has waited
  // options.close_check_after looks once (check_close).
  SocketDeadline close_check;
  bool read_now = false;
  // The body is decoded in place here: read_some() hands out views of it.
  ReadBuffer buffer;
  // How long it may sit idle after the last response (zero: do not pool),
  // and how many more requests the upstream takes on it (nullopt: no limit
  // was announced). Both from the last response.
  Clock::duration lifetime{};
  std::optional<unsigned> requests_left;
  // Set when it went idle.
  Clock::time_point idle_since{};
  Clock::time_point usable_until{};
};

namespace {

// The calls in progress on one I/O context, across its pools: while there
// are others, the loop has their work to do before it comes back to a call
// that just wrote its request, and the answer has usually arrived by then.
class LoopCalls : public net::execution_context::service {
 public:
  static inline net::execution_context::id id;
  explicit LoopCalls(net::execution_context& context) : service(context) {}
  static std::size_t& of(const net::any_io_executor& executor) {
    return net::use_service<LoopCalls>(net::query(executor, net::execution::context)).calls_;
  }

 private:
  // Calls destroyed at the context's shutdown still count down here: the
  // context's services are destroyed only after all are shut down.
  void shutdown() override {}
  std::size_t calls_ = 0;
};

}  // namespace

struct UpstreamPool::State {
  net::any_io_executor executor;
  Url url;
  UpstreamOptions options;
  std::vector<std::unique_ptr<Connection>> idle;  // most recently used last
  std::size_t calls = 0;                          // UpstreamCall objects alive
  std::size_t* loop_calls;                        // theirs and other pools' on the loop
  bool closed = false;    // the UpstreamPool is gone; its calls return nothing
  std::string authority;  // url's "host:port": every request's Host, formatted once

  // Closes idle connections the upstream may have closed by `now`.
  void drop_expired(Clock::time_point now) {
    std::erase_if(idle, [now](const auto& c) { return c->usable_until <= now; });
  }
  // Closes idle connections idle since `t` or longer: when one of that age
  // turned out closed, so are they, most likely.
  void drop_idle_since(Clock::time_point t) {
    std::erase_if(idle, [t](const auto& c) { return c->idle_since <= t; });
  }
  std::unique_ptr<Connection> checkout() {
    drop_expired(options.now());
    if (idle.empty()) return nullptr;
    auto conn = std::move(idle.back());
    idle.pop_back();
    return conn;
  }
  void give_back(std::unique_ptr<Connection> conn) {
    const auto now = options.now();
    drop_expired(now);
    if (closed || idle.size() >= options.max_idle) return;
    conn->idle_since = now;
    conn->usable_until = now + conn->lifetime;
    idle.push_back(std::move(conn));
  }
};

UpstreamPool::UpstreamPool(net::any_io_executor executor, Url url, UpstreamOptions options)
    : state_(std::make_shared<State>(State{
          executor, url, options, {}, 0, &LoopCalls::of(executor), false, url.authority()})) {}
UpstreamPool::~UpstreamPool() {
  state_->closed = true;
  state_->idle.clear();
}
const Url& UpstreamPool::url() const {
  return state_->url;
}
const UpstreamOptions& UpstreamPool::options() const {
  return state_->options;
}
void UpstreamPool::set_max_idle(std::size_t n) {
  state_->options.max_idle = n;
}
std::size_t UpstreamPool::idle_count() const {
  return state_->idle.size();
}

struct UpstreamCall::State {
  // Shared, not a reference: a call's frame may be destroyed after the pool
  // (at shutdown, io_context teardown destroys frames after their owners).
  explicit State(std::shared_ptr<UpstreamPool::State> p) : pool(std::move(p)) {}
  std::shared_ptr<UpstreamPool::State> pool;
  std::unique_ptr<UpstreamPool::Connection> conn;
  // Whether the response's header lets the connection carry another
  // request. The header's parser itself lives in send()'s frame only: a
  // stream's call holds this state as long as the stream is open.
  bool keep_alive = false;
  std::optional<BodyDecoder> body;  // once the header is in
  // What read_all() holds of a budget, given back when the call ends.
  std::shared_ptr<BufferBudget> budget;
  std::size_t charged = 0;
  // Whether the response was read to its end.
  bool done() const { return body && body->done(); }

  // Decodes what the buffer holds into views of it: read_some()'s pieces.
  BodyPieces decode_buffered() {
    // One array a thread, not one a call: its caller reads the views before
    // it next suspends, and an open stream then holds none (512 bytes).
    static constexpr std::size_t kMaxPieces = 32;
    thread_local std::array<std::string_view, kMaxPieces> pieces;
    auto& buffer = conn->buffer;
    std::size_t n = 0;
    while (n < kMaxPieces && buffer.size() > 0) {
      const auto step = body->next({static_cast<const char*>(buffer.data().data()), buffer.size()});
      // Consuming moves no bytes: the views stay valid until the next read.
      buffer.consume(step.used);
      if (step.data.empty()) break;
      pieces[n++] = step.data;
    }
    return BodyPieces(pieces.data(), n);
  }
};

UpstreamCall::UpstreamCall(UpstreamPool& pool) : state_(std::make_unique<State>(pool.state_)) {
  ++pool.state_->calls;
  ++*pool.state_->loop_calls;
}

UpstreamCall::~UpstreamCall() {
  auto& s = *state_;
  if (s.budget) s.budget->give_back(s.charged);
  --s.pool->calls;
  --*s.pool->loop_calls;
  // Only a connection read to the end and no further (bytes after the
  // response would be read as the next one's), kept alive, not closed by
  // abort() (a client that left after the response was read), and on which
  // the upstream takes another request goes back to the pool.
  if (s.conn && s.done() && s.conn->buffer.size() == 0 && s.keep_alive &&
      failure_ != UpstreamFailure::aborted && s.conn->socket.is_open() &&
      s.conn->lifetime > Clock::duration::zero() && s.conn->requests_left != 0u) {
    s.pool->give_back(std::move(s.conn));
  }
}

void UpstreamCall::abort() {
  failure_ = UpstreamFailure::aborted;
  if (state_->conn) state_->conn->close();
}

namespace {

// `timed_out`: the connection's deadline closed it.
UpstreamFailure classify(const boost::system::error_code& ec, bool timed_out) {
  if (timed_out) return UpstreamFailure::timeout;
  if (ec == net::error::operation_aborted) return UpstreamFailure::aborted;
  if (ec.category() == beast_http::make_error_code(beast_http::error::end_of_stream).category() &&
      ec != beast_http::error::end_of_stream && ec != beast_http::error::partial_message)
    return UpstreamFailure::protocol;
  return UpstreamFailure::reset;
}

// This process ran out of something: no fault of the upstream's.
bool local_shortage(const boost::system::error_code& ec) {
  namespace errc = boost::system::errc;
  return ec == errc::too_many_files_open || ec == errc::too_many_files_open_in_system ||
         ec == errc::no_buffer_space || ec == errc::not_enough_memory ||
         ec == errc::address_not_available;
}

// How the upstream closed an idle connection, as seen by the next request.
bool closed_by_peer(const boost::system::error_code& ec) {
  return ec == beast_http::error::end_of_stream || ec == net::error::eof ||
         ec == net::error::connection_reset || ec == net::error::broken_pipe ||
         ec == net::error::bad_descriptor;
}

// How long a connection may idle when the upstream closes it after
// `timeout`: a margin for the next request's way there and for clocks that
// count from a different moment (the upstream's last write, not our read).
Clock::duration usable_idle(std::chrono::seconds timeout) {
  using namespace std::chrono_literals;
  return timeout > 2s ? Clock::duration(timeout - 1s) : Clock::duration(timeout) / 2;
}

struct ConnectFailure {
  std::string message;
  bool local = false;
};

// Fails with "timed out" when the deadline passed.
awaitable<std::optional<ConnectFailure>> connect(UpstreamPool::Connection& conn, const Url& url,
                                                 std::chrono::milliseconds timeout) {
  boost::system::error_code ec;
  // A numeric host needs no resolver, whose every lookup is a round trip
  // through a helper thread.
  const auto address = net::ip::make_address(url.host, ec);
  if (!ec) {
    const tcp::endpoint endpoint(address, url.port);
    // Opened here so that running out of descriptors is told apart from
    // the upstream refusing.
    if (conn.socket.open(endpoint.protocol(), ec); ec)
      co_return ConnectFailure{ec.message(), local_shortage(ec)};
    conn.deadline.expires_after(timeout);
    auto [cec] = co_await conn.socket.async_connect(endpoint, use_tuple);
    ec = cec;
  } else {
    tcp::resolver resolver(conn.socket.get_executor());
    auto [rec, results] =
        co_await resolver.async_resolve(url.host, std::to_string(url.port), use_tuple);
    if (rec) co_return ConnectFailure{rec.message(), local_shortage(rec)};
    conn.deadline.expires_after(timeout);
    auto [cec, endpoint] = co_await net::async_connect(conn.socket, results, use_tuple);
    ec = cec;
  }
  conn.deadline.expires_never();
  if (conn.deadline.expired()) co_return ConnectFailure{"timed out"};
  if (ec) co_return ConnectFailure{ec.message(), local_shortage(ec)};
  boost::system::error_code nodelay_ec;
  conn.socket.set_option(tcp::no_delay(true), nodelay_ec);
  co_return std::nullopt;
}

// Records what the response says about reusing its connection.
void note_keep_alive(UpstreamPool::Connection& conn, const Headers& headers,
                     const UpstreamOptions& options) {
  KeepAliveHint hint;
  if (auto value = headers.find("keep-alive")) hint = parse_keep_alive(*value);
  conn.lifetime =
      hint.timeout ? usable_idle(*hint.timeout) : Clock::duration(options.idle_lifetime);
  if (hint.max)
    conn.requests_left = *hint.max > 0 ? *hint.max - 1 : 0;
  else if (conn.requests_left && *conn.requests_left > 0)
    --*conn.requests_left;
}

}  // namespace

awaitable<Result<UpstreamHead>> UpstreamCall::send(const UpstreamRequest& request) {
  auto& s = *state_;
  auto& pool = *s.pool;
  const auto& opts = pool.options;
  // Methods that carry a body say how long it is, even when it is empty.
  const bool framed = !request.body.empty() || request.method == "POST" ||
                      request.method == "PUT" || request.method == "PATCH";
  const std::string head =
      request_head(request.method, pool.url.path + request.target, pool.authority, request.headers,
                   framed ? Framing::content_length(request.body.size()) : Framing::no_body());
  const std::array<net::const_buffer, 2> message{
      net::buffer(head), net::buffer(request.body.data(), request.body.size())};

  // A pooled connection may have been closed by the upstream while idle
  // (its keep-alive timeout announced late, or not at all); such a failure
  // before any response byte is retried on a newly opened connection, never
  // on another pooled one, which is likely just as stale.
  std::optional<ResponseParser> parser;
  for (bool may_reuse = true;; may_reuse = false) {
    parser.reset();
    s.keep_alive = false;
    s.body.reset();
    s.conn = may_reuse ? pool.checkout() : nullptr;
    const bool reused = s.conn != nullptr;
    if (!reused) {
      s.conn = std::make_unique<UpstreamPool::Connection>(pool.executor);
      auto failed = co_await connect(*s.conn, pool.url, opts.connect_timeout);
      if (failed) {
        if (failure_ != UpstreamFailure::aborted)
          failure_ = failed->local ? UpstreamFailure::local : UpstreamFailure::connect;
        s.conn.reset();
        co_return Error{fmt::format("cannot connect to {}: {}", pool.authority, failed->message)};
      }
    }
    auto& conn = *s.conn;
    conn.buffer.reserve(kReadBlock);  // given back by a stream's wait
    conn.deadline.expires_after(opts.first_byte_timeout);
    // With other calls in progress to this upstream the write waits for the
    // loop's round of ready handlers, so that the engine is woken once for
    // that round's requests rather than once each (as haproxy sends after a
    // round of receives): at 50 connections its context switches fell from
    // 0.16 to 0.07 a request (docs/performance.md). write_all()'s halves, so
    // that a request the socket takes whole (nearly all) costs no coroutine
    // frame. With calls in progress to any upstream, the head is read after
    // the loop's round too (LoopCalls).
    const bool batched = pool.calls > 1;
    const bool busy = *pool.loop_calls > 1;
    if (batched) co_await let_loop_run(conn.socket);
    boost::system::error_code wec;
    const std::size_t sent = write_now(conn.socket, message, wec);
    if (!wec && sent < net::buffer_size(message))
      wec = co_await write_rest(conn.socket, message, sent);
    if (!wec) {
      if (busy) co_await let_loop_run(conn.socket);
      parser.emplace();
      if (!read_until_now(conn.socket, conn.buffer, *parser, ReadUntil::header, busy, wec))
        wec = co_await read_until(conn.socket, conn.buffer, *parser, ReadUntil::header);
    }
    conn.deadline.expires_never();
    const bool timed_out = conn.deadline.expired();
    if (!wec) {
      if (request.method == "HEAD" || parser->is_done())
        s.body = BodyDecoder::with_length(0);
      else if (parser->chunked())
        s.body = BodyDecoder::chunked();
      else if (auto length = parser->content_length())
        s.body = BodyDecoder::with_length(*length);
      else
        s.body = BodyDecoder::until_close();
      s.keep_alive = parser->keep_alive();
      note_keep_alive(conn, parser->headers, opts);
      UpstreamHead reply;
      reply.status = parser->status();
      reply.headers = std::move(parser->headers);
      co_return reply;
    }
    const bool stale = reused && !timed_out && failure_ != UpstreamFailure::aborted &&
                       !(parser && parser->got_some()) && closed_by_peer(wec);
    if (stale) {
      pool.drop_idle_since(conn.idle_since);
      continue;
    }
    if (failure_ != UpstreamFailure::aborted) failure_ = classify(wec, timed_out);
    s.conn.reset();
    co_return Error{fmt::format("{} failed: {}", pool.authority,
                                timed_out ? "no response in time" : wec.message())};
  }
}

std::optional<Result<BodyPieces>> UpstreamCall::buffered() {
  auto& s = *state_;
  const BodyPieces pieces = s.decode_buffered();
  if (s.body->error()) return read_failed(beast_http::error::bad_chunk, s.body->error());
  // Chunk framing alone yields no body bytes: the socket is read for some.
  if (!pieces.empty() || s.body->done()) return pieces;
  return std::nullopt;
}

// read_some()'s reader: one block-read operation for all the reads it
// takes, not a coroutine: a stream reads once a token, and a coroutine's
// frame cost a malloc, a free and a resume more each time, Asio's handler
// moves a few hundred instructions (docs/performance.md).
struct UpstreamCall::ReadSome {
  using Answer = std::tuple<Result<BodyPieces>>;
  using Then = block_read_detail::Then;
  UpstreamCall& call;
  PieceSink* sink;
  bool reading = false;  // a read is what the next step follows

  // An answer without a read still comes after read_some() returns, and
  // is decoded then: the pieces' span is the thread's.
  bool decodes_first() const {
    const auto& s = *call.state_;
    return s.conn->buffer.size() > 0 || s.body->done();
  }

  Then start() { return decodes_first() ? Then::resume : read(Clock::now()); }

  std::optional<Answer> step(boost::system::error_code ec, std::size_t, Then& then) {
    if (std::exchange(reading, false)) {
      if (auto failed = read_done(ec)) return Answer{std::move(*failed)};
    }
    if (auto got = call.buffered()) {
      if (!sink || !*got || (*got)->empty()) return Answer{std::move(*got)};
      const auto now = Clock::now();
      if (!sink->take(**got, now)) return Answer{std::move(*got)};
      then = decodes_first() ? Then::resume : read(now);
      return std::nullopt;
    }
    then = read(Clock::now());
    return std::nullopt;
  }

  // A stream waits here between tokens and for as long as its engine
  // stalls, holding no read block while nothing half-read is held: 5,000
  // idle streams held 20 MiB of them (docs/reliability.md, "Idle streams").
  Then read(Clock::time_point now) {
    auto& s = *call.state_;
    auto& conn = *s.conn;
    conn.deadline.expires_after(s.pool->options.idle_timeout, now);
    conn.close_check.expires_after(s.pool->options.close_check_after, now);
    reading = true;
    // A body that ends at the close is read on at once: its close nearly
    // always comes with its last bytes.
    const bool at_once = std::exchange(conn.read_now, false) || s.body->ends_at_close();
    return at_once ? Then::read_now : Then::read;
  }

  // After a read: its failure, or nullopt to decode what came (or read on).
  std::optional<Result<BodyPieces>> read_done(boost::system::error_code ec) {
    auto& s = *call.state_;
    auto& conn = *s.conn;
    conn.close_check.expires_never();
    conn.deadline.expires_never();
    if (!ec) return std::nullopt;  // nearly every read: nothing compared (error_is)
    if (ec == net::error::operation_aborted && conn.read_now && conn.socket.is_open())
      return std::nullopt;
    if (ec == net::error::eof && s.body->end_of_input()) return std::nullopt;
    if (ec == net::error::eof) ec = beast_http::error::partial_message;
    if (ec) return call.read_failed(ec);
    return std::nullopt;
  }
};

template <class Handler>
void UpstreamCall::start_read_some(Handler handler, PieceSink* sink) {
  auto& conn = *state_->conn;
  conn.socket.async_read_blocks(conn.buffer, 64 * 1024, ReadSome{*this, sink}, std::move(handler));
}

// The handler `co_await` gives an operation completing with a
// Result<BodyPieces> in an awaitable<> on the project's executor type.
template void UpstreamCall::start_read_some(
    net::detail::awaitable_async_op_handler<void(Result<BodyPieces>), net::any_io_executor>,
    PieceSink*);

Error UpstreamCall::read_failed(const boost::system::error_code& ec, const char* detail) {
  auto& conn = *state_->conn;
  const bool timed_out = conn.deadline.expired();
  if (failure_ != UpstreamFailure::aborted) failure_ = classify(ec, timed_out);
  conn.close();
  return Error{fmt::format("{} broke off the response: {}", state_->pool->authority,
                           timed_out ? "no data within the idle timeout"
                           : detail  ? std::string(detail)
                                     : ec.message())};
}

awaitable<Result<std::string>> UpstreamCall::read_all(std::size_t limit,
                                                      std::shared_ptr<BufferBudget> budget) {
  auto& s = *state_;
  std::string out;
  // A failed read gives its bytes back at once: the caller gets no body.
  const auto fail = [&](UpstreamFailure why, std::string message) -> Error {
    abort();
    failure_ = why;
    if (s.budget) s.budget->give_back(s.charged);
    s.charged = 0;
    return Error{std::move(message)};
  };
  for (;;) {
    // Often the whole body came with the head: no read_some() coroutine.
    auto got = buffered();
    if (!got) got = co_await read_some();
    const auto& pieces = *got;
    if (!pieces) {
      if (s.budget) s.budget->give_back(s.charged);
      s.charged = 0;
      co_return pieces.error();
    }
    if (pieces->empty()) co_return out;
    std::size_t size = 0;
    for (auto piece : *pieces) size += piece.size();
    if (out.size() + size > limit)
      co_return fail(UpstreamFailure::protocol,
                     fmt::format("response from {} exceeds {} bytes", s.pool->authority, limit));
    if (budget) {
      if (!budget->try_take(size))
        co_return fail(UpstreamFailure::local,
                       fmt::format("response from {} does not fit in the buffer for responses "
                                   "({} of {} bytes in use)",
                                   s.pool->authority, budget->used(), budget->total()));
      s.budget = budget;
      s.charged += size;
    }
    for (auto piece : *pieces) out.append(piece);
  }
}

}  // namespace switchyard::http
