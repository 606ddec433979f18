#include "http/upstream.h"

#include <array>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "http/beast_glue.h"
#include "http/parsers.h"
#include "http/socket_deadline.h"
#include "http/wire.h"

namespace switchyard::http {

struct UpstreamPool::Connection {
  // Room for a whole small response in the first read (Beast reads at most
  // 512 bytes into an empty buffer: two reads for a typical completion).
  explicit Connection(net::any_io_executor ex) : socket(ex), deadline(ex, [this] { close(); }) {
    buffer.reserve(16 * 1024);
  }
  void close() {
    boost::system::error_code ec;
    socket.close(ec);
  }
  tcp::socket socket;
  // Closes the socket when an operation overruns, as Beast's tcp_stream did.
  SocketDeadline deadline;
  beast::flat_buffer buffer;
  // Where read_some() puts body bytes; here, not per call, so that a pooled
  // connection allocates it once.
  std::array<char, 16 * 1024> piece;
};

struct UpstreamPool::State {
  net::any_io_executor executor;
  Url url;
  UpstreamOptions options;
  std::vector<std::unique_ptr<Connection>> idle;
  std::size_t calls = 0;  // UpstreamCall objects alive
};

UpstreamPool::UpstreamPool(net::any_io_executor executor, Url url, UpstreamOptions options)
    : state_(std::make_unique<State>(State{executor, std::move(url), options, {}, 0})) {}
UpstreamPool::~UpstreamPool() = default;
const Url& UpstreamPool::url() const {
  return state_->url;
}
const UpstreamOptions& UpstreamPool::options() const {
  return state_->options;
}
void UpstreamPool::set_max_idle(std::size_t n) {
  state_->options.max_idle = n;
}

struct UpstreamCall::State {
  explicit State(UpstreamPool::State& p) : pool(p) {}
  UpstreamPool::State& pool;
  std::unique_ptr<UpstreamPool::Connection> conn;
  std::optional<ResponseParser> parser;
  // Whether the response was read to its end.
  bool done() const { return parser && parser->is_done(); }
};

UpstreamCall::UpstreamCall(UpstreamPool& pool) : state_(std::make_unique<State>(*pool.state_)) {
  ++pool.state_->calls;
}

UpstreamCall::~UpstreamCall() {
  auto& s = *state_;
  --s.pool.calls;
  // Only a connection read to the end, kept alive, and not closed by abort()
  // (a client that left after the response was read) goes back to the pool.
  if (s.conn && s.done() && s.parser->keep_alive() && failure_ != UpstreamFailure::aborted &&
      s.conn->socket.is_open() && s.pool.idle.size() < s.pool.options.max_idle) {
    s.pool.idle.push_back(std::move(s.conn));
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

// Fails with "timed out" when the deadline passed.
awaitable<std::optional<std::string>> connect(UpstreamPool::Connection& conn, const Url& url,
                                              std::chrono::milliseconds timeout) {
  tcp::resolver resolver(conn.socket.get_executor());
  const std::string port = std::to_string(url.port);
  auto [rec, results] = co_await resolver.async_resolve(url.host, port, use_tuple);
  if (rec) co_return rec.message();
  conn.deadline.expires_after(timeout);
  auto [cec, ep] = co_await net::async_connect(conn.socket, results, use_tuple);
  conn.deadline.expires_never();
  if (conn.deadline.expired()) co_return std::string("timed out");
  if (cec) co_return cec.message();
  boost::system::error_code nodelay_ec;
  conn.socket.set_option(tcp::no_delay(true), nodelay_ec);
  co_return std::nullopt;
}

}  // namespace

awaitable<Result<UpstreamHead>> UpstreamCall::send(const UpstreamRequest& request) {
  auto& s = *state_;
  const auto& opts = s.pool.options;
  // Methods that carry a body say how long it is, even when it is empty.
  const bool framed = !request.body.empty() || request.method == "POST" ||
                      request.method == "PUT" || request.method == "PATCH";
  const std::string head = request_head(
      request.method, s.pool.url.path + request.target, s.pool.url.authority(), request.headers,
      framed ? Framing::content_length(request.body.size()) : Framing::no_body());
  const std::array<net::const_buffer, 2> message{
      net::buffer(head), net::buffer(request.body.data(), request.body.size())};

  // A reused connection may have been closed by the upstream while idle; such
  // a failure before any response byte is retried once on a fresh connection.
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool reused = false;
    if (!s.pool.idle.empty()) {
      s.conn = std::move(s.pool.idle.back());
      s.pool.idle.pop_back();
      reused = true;
    } else {
      s.conn = std::make_unique<UpstreamPool::Connection>(s.pool.executor);
      auto failed = co_await connect(*s.conn, s.pool.url, opts.connect_timeout);
      if (failed) {
        if (failure_ != UpstreamFailure::aborted) failure_ = UpstreamFailure::connect;
        co_return Error{fmt::format("cannot connect to {}: {}", s.pool.url.authority(), *failed)};
      }
    }
    auto& conn = *s.conn;
    conn.deadline.expires_after(opts.first_byte_timeout);
    auto wec = co_await write_all(conn.socket, message);
    if (!wec) {
      if (s.pool.calls > 1) co_await let_loop_run(conn.socket);
      s.parser.emplace();
      s.parser->body_limit(boost::none);
      auto [rec, rn] =
          co_await beast_http::async_read_header(conn.socket, conn.buffer, *s.parser, use_tuple);
      wec = rec;
    }
    conn.deadline.expires_never();
    const bool timed_out = conn.deadline.expired();
    if (!wec) {
      UpstreamHead reply;
      reply.status = s.parser->status;
      reply.headers = std::move(s.parser->headers);
      co_return reply;
    }
    const bool stale = reused && !timed_out && failure_ != UpstreamFailure::aborted &&
                       (wec == beast_http::error::end_of_stream || wec == net::error::eof ||
                        wec == net::error::connection_reset || wec == net::error::broken_pipe ||
                        wec == net::error::bad_descriptor);
    if (stale) continue;
    if (failure_ != UpstreamFailure::aborted) failure_ = classify(wec, timed_out);
    s.conn.reset();
    co_return Error{fmt::format("{} failed: {}", s.pool.url.authority(),
                                timed_out ? "no response in time" : wec.message())};
  }
  failure_ = UpstreamFailure::reset;
  co_return Error{fmt::format("{} closed the connection twice", s.pool.url.authority())};
}

awaitable<Result<std::string_view>> UpstreamCall::read_some() {
  auto& s = *state_;
  // Chunk framing alone yields no body bytes: read until there are some.
  while (!s.done()) {
    auto& conn = *s.conn;
    s.parser->body_into(conn.piece.data(), conn.piece.size());
    // Often the whole body came with the headers; otherwise read.
    auto ec = parse_buffered(*s.parser, conn.buffer);
    if (!ec && s.parser->body_bytes() == 0 && !s.done()) {
      conn.deadline.expires_after(s.pool.options.idle_timeout);
      auto [read_ec, n] =
          co_await beast_http::async_read_some(conn.socket, conn.buffer, *s.parser, use_tuple);
      conn.deadline.expires_never();
      ec = read_ec == beast_http::error::need_buffer ? boost::system::error_code() : read_ec;
    }
    if (ec) {
      const bool timed_out = conn.deadline.expired();
      if (failure_ != UpstreamFailure::aborted) failure_ = classify(ec, timed_out);
      conn.close();
      co_return Error{fmt::format("{} broke off the response: {}", s.pool.url.authority(),
                                  timed_out ? "no data within the idle timeout" : ec.message())};
    }
    const std::size_t got = s.parser->body_bytes();
    if (got > 0) co_return std::string_view(conn.piece.data(), got);
  }
  co_return std::string_view{};
}

awaitable<Result<std::string>> UpstreamCall::read_all(std::size_t limit) {
  std::string out;
  for (;;) {
    auto piece = co_await read_some();
    if (!piece) co_return piece.error();
    if (piece->empty()) co_return out;
    if (out.size() + piece->size() > limit) {
      abort();
      failure_ = UpstreamFailure::protocol;
      co_return Error{
          fmt::format("response from {} exceeds {} bytes", state_->pool.url.authority(), limit)};
    }
    out.append(*piece);
  }
}

}  // namespace switchyard::http
