#include "http/server.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "http/beast_glue.h"
#include "http/client_watch.h"
#include "http/heap_trim.h"
#include "http/parsers.h"
#include "http/socket_deadline.h"
#include "http/wire.h"

namespace switchyard::http {

// A client watch is armed 50–100 ms into its request (client_watch.h).
constexpr std::chrono::milliseconds kWatchTick{50};

namespace {

// The error answer a connection ends with. `status` 0: none (the client
// left, or stalled before sending anything).
struct ErrorAnswer {
  int status = 0;
  std::string message;
  bool names_path = false;  // the request's head was read: its route may speak its own format
  bool linger = true;       // request bytes may still be on the way (linger_close)
  bool refusal = false;     // a request past the cap: answered 503, then close_refused
};

}  // namespace

struct Server::State : std::enable_shared_from_this<Server::State> {
  State(net::any_io_executor ex, Handler& h, ServerOptions o)
      : executor(ex),
        handler(h),
        options(std::move(o)),
        keep_alive_value(keep_alive_header(options)),
        acceptor(ex),
        watches(ex, kWatchTick),
        heap_trimmer(ex) {}

  ~State() {
    if (spare_fd >= 0) ::close(spare_fd);
  }

  static std::string keep_alive_header(const ServerOptions& o);

  awaitable<void> accept_loop();
  // `over_cap`: in the probe reserve past max_connections (probe_paths only).
  awaitable<void> session(tcp::socket socket, bool over_cap);
  // A connection refused at the cap: logged once per episode.
  void note_refused();
  // After a refusal at the cap: lingers (kMaxLingeringRefusals at most), closes.
  awaitable<void> close_refused(tcp::socket& socket, SocketDeadline& deadline);
  awaitable<void> answer_error(tcp::socket& socket, SocketDeadline& deadline, int status,
                               std::string message, unsigned version, std::string_view path = {});
  // Why the request whose head was read is not read further, if it is not.
  ErrorAnswer check_head(const RequestHead& head, unsigned version, bool over_cap);
  // Answers `failure`, if any, and closes the connection as it deserves.
  awaitable<void> end_session(tcp::socket& socket, SocketDeadline& deadline, ErrorAnswer failure,
                              Request& request, unsigned version);
  awaitable<void> refuse(tcp::socket socket);
  // The handler's early answer (Handler::screen), if any, on the heap: in
  // the session's frame a Response would be over 400 bytes for every open
  // connection.
  std::unique_ptr<Response> screen(RequestHead& head);
  awaitable<void> accept_failed(const boost::system::error_code& ec);
  void shed_pending();
  void connection_closed();
  std::string refusal_bytes();

  // Constant after construction.
  net::any_io_executor executor;
  Handler& handler;
  const ServerOptions options;
  const std::string keep_alive_value;  // of the Keep-Alive header; empty: not sent
  // Owned by the accept loop.
  tcp::acceptor acceptor;
  // Shared by the sessions, on the executor's thread.
  ClientWatches watches;
  // Updated by sessions; read by drain logic on any thread.
  std::atomic<std::size_t> active{0};
  // On the executor's thread. Client connections open (sessions and
  // refusals still lingering).
  std::size_t connections = 0;
  // Returns the buffers of a burst of closed connections to the kernel.
  HeapTrimmer heap_trimmer;
  std::size_t lingering_refusals = 0;
  std::size_t refused = 0;          // in this episode at the cap; 0: not at the cap
  std::size_t accept_failures = 0;  // in a row; the first one is logged
  // A descriptor held back for the moment accept() fails with EMFILE: closed
  // to accept the waiting connection and answer it 503, then reopened.
  int spare_fd = -1;
};

namespace {

// Refused connections linger (below) at most this many at once.
constexpr std::size_t kMaxLingeringRefusals = 64;
constexpr std::string_view kAtTheCap = "the gateway is at its connection limit; retry shortly";
constexpr std::chrono::milliseconds kLingerTime{2000};
constexpr std::size_t kLingerBytes = 1 << 20;
constexpr std::chrono::milliseconds kAcceptBackoffMax{1000};

// The engines the gateway starts must not inherit its sockets (Asio opens
// them without SOCK_CLOEXEC); the child also closes every descriptor above 2
// before exec, this covers anything else that execs.
void set_cloexec(int fd) {
  const int flags = ::fcntl(fd, F_GETFD);
  if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

bool out_of_descriptors(const boost::system::error_code& ec) {
  return ec == boost::system::errc::too_many_files_open ||
         ec == boost::system::errc::too_many_files_open_in_system;
}

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

// The session's implementation of Exchange. Lives on the session coroutine's
// frame for the duration of one request.
class SessionExchange final : public Exchange {
 public:
  // `keep_alive_value`: of the Keep-Alive header a kept-alive response
  // carries (empty: none); it must outlive the exchange.
  SessionExchange(tcp::socket& socket, SocketDeadline& deadline, ClientWatches& watches,
                  const ServerOptions& options, unsigned version, bool keep_alive,
                  std::string_view keep_alive_value = {})
      : socket_(socket),
        deadline_(deadline),
        watches_(watches),
        options_(options),
        version_(version),
        keep_alive_(keep_alive),
        keep_alive_value_(keep_alive_value) {}

  awaitable<bool> respond(Response response) override {
    // A handler may end the connection after this response.
    if (auto c = response.headers.find("connection"); c && iequals(*c, "close"))
      keep_alive_ = false;
    advertise_keep_alive(response.headers);
    if (!status_has_body(response.status)) response.body.clear();
    const std::string head =
        response_head(response.status, version_, response.headers, options_.server_name,
                      Framing::content_length(response.body.size()), keep_alive_);
    started_ = true;
    const Pieces pieces{net::buffer(head), net::buffer(response.body)};
    const bool ok = co_await write(pieces);
    co_return ok;
  }

  awaitable<bool> start_stream(int status, Headers headers) override {
    if (!start_stream_now(status, std::move(headers))) co_return false;
    if (flushed()) co_return true;
    co_return co_await flush();
  }

  bool start_stream_now(int status, Headers headers) override {
    if (!ok_) return false;
    if (!chunked()) keep_alive_ = false;
    advertise_keep_alive(headers);
    const std::string head =
        response_head(status, version_, headers, options_.server_name,
                      chunked() ? Framing::chunked() : Framing::no_body(), keep_alive_);
    started_ = true;
    streaming_ = true;
    return write_or_keep({net::buffer(head)});
  }

  awaitable<bool> send_chunk(std::string_view data) override {
    if (!send_chunk_now(data)) co_return false;
    if (flushed()) co_return true;
    co_return co_await flush();
  }

  bool send_chunk_now(std::string_view data) override {
    if (!ok_) return false;
    if (data.empty()) return true;  // an empty chunk would end the body
    const net::const_buffer payload = net::buffer(data.data(), data.size());
    if (!chunked()) return write_or_keep({payload});
    char size_line[20];
    char* end = std::to_chars(size_line, size_line + 16, data.size(), 16).ptr;
    end[0] = '\r';
    end[1] = '\n';
    const std::size_t size_length = static_cast<std::size_t>(end + 2 - size_line);
    return write_or_keep({net::buffer(size_line, size_length), payload, net::buffer(kCrlf)});
  }

  bool flushed() const override { return backlog_.empty(); }

  awaitable<bool> flush() override {
    if (!ok_ || backlog_.empty()) co_return ok_;
    deadline_.expires_after(options_.write_timeout);
    const std::array<net::const_buffer, 1> rest{net::buffer(backlog_)};
    const auto ec = co_await write_rest(socket_, rest, 0);
    deadline_.expires_never();
    backlog_.clear();
    ok_ = !ec;
    co_return ok_;
  }

  awaitable<bool> end_stream() override {
    if (!ok_) co_return false;
    streaming_ = false;
    if (!chunked()) {
      keep_alive_ = false;
      co_return true;
    }
    const Pieces pieces{net::buffer(kLastChunk)};
    const bool ok = co_await write(pieces);
    co_return ok;
  }

  awaitable<bool> until_client_gone() override { return until_client_leaves(socket_); }

  void watch_client(std::function<void()> on_gone) override {
    watch_ = watches_.watch(socket_, std::move(on_gone));
  }

  void unwatch_client() override { watch_.reset(); }

  bool started() const override { return started_; }

  void abort_connection() override {
    boost::system::error_code ec;
    socket_.set_option(net::socket_base::linger(true, 0), ec);
    socket_.close(ec);
    ok_ = false;
    aborted_ = true;
  }

  // Whether the handler reset the connection: nothing more may be written.
  bool aborted() const { return aborted_; }
  // Whether the connection can carry another request.
  bool reusable() const { return ok_ && keep_alive_ && !streaming_; }

 private:
  static constexpr std::string_view kCrlf = "\r\n";
  static constexpr std::string_view kLastChunk = "0\r\n\r\n";

  // HTTP/1.0 has no chunked encoding: a stream's body ends with the connection.
  bool chunked() const { return version_ != 10; }

  void advertise_keep_alive(Headers& headers) const {
    if (keep_alive_ && !keep_alive_value_.empty()) headers.set("Keep-Alive", keep_alive_value_);
  }

  // Up to three buffers written in one gather write; unused ones are empty.
  using Pieces = std::array<net::const_buffer, 3>;

  // Writes what of `pieces` the socket takes now and keeps the rest, in
  // order, for flush(). Returns false when the client is gone.
  bool write_or_keep(const Pieces& pieces) {
    std::size_t sent = 0;
    if (backlog_.empty()) {
      boost::system::error_code ec;
      sent = write_now(socket_, pieces, ec);
      if (ec) {
        ok_ = false;
        return false;
      }
    }
    for (const auto& piece : pieces) {
      const std::size_t skip = std::min(sent, piece.size());
      sent -= skip;
      // Nearly always all of it went: an empty append costs a length check.
      if (skip < piece.size())
        backlog_.append(static_cast<const char*>(piece.data()) + skip, piece.size() - skip);
    }
    return true;
  }

  // A response, or a stream's head or end: the common case (the socket
  // takes it all) reads no clock.
  awaitable<bool> write(const Pieces& pieces) {
    if (!backlog_.empty() && !co_await flush()) co_return false;
    boost::system::error_code ec;
    const std::size_t sent = write_now(socket_, pieces, ec);
    if (!ec && sent < net::buffer_size(pieces)) {
      deadline_.expires_after(options_.write_timeout);
      ec = co_await write_rest(socket_, pieces, sent);
      deadline_.expires_never();
    }
    ok_ = !ec;
    co_return ok_;
  }

  tcp::socket& socket_;
  SocketDeadline& deadline_;
  ClientWatches& watches_;
  const ServerOptions& options_;
  unsigned version_;
  bool keep_alive_;
  std::string_view keep_alive_value_;
  bool started_ = false;
  bool streaming_ = false;
  bool ok_ = true;
  bool aborted_ = false;
  ClientWatch watch_;
  std::string backlog_;  // what send_chunk_now() could not write yet
};

// Writes a response outside any exchange (protocol errors) and reports success.
awaitable<bool> write_response(tcp::socket& socket, SocketDeadline& deadline,
                               ClientWatches& watches, const ServerOptions& options,
                               Response&& response, unsigned version) {
  SessionExchange ex(socket, deadline, watches, options, version, /*keep_alive=*/false);
  const bool ok = co_await ex.respond(std::move(response));
  co_return ok;
}

// Closes after an error answer. The client may still be sending (a body that
// was refused): closing with unread bytes would reset the connection, and a
// reset can destroy the answer before the client reads it. So stop sending,
// then read and discard for a bounded time and amount.
awaitable<void> linger_close(tcp::socket& socket, SocketDeadline& deadline) {
  boost::system::error_code ec;
  socket.shutdown(tcp::socket::shutdown_send, ec);
  if (!ec) {
    std::array<char, 16384> scratch;
    std::size_t total = 0;
    deadline.expires_after(kLingerTime);
    while (total < kLingerBytes) {
      auto [read_ec, n] = co_await socket.async_read_some(net::buffer(scratch), use_tuple);
      if (read_ec) break;
      total += n;
    }
    deadline.expires_never();
  }
  socket.close(ec);
}

// Whether a read error means the client went away (nothing is owed to it).
bool client_went_away(const boost::system::error_code& ec) {
  return ec == beast_http::error::end_of_stream || ec == net::error::eof ||
         ec == net::error::connection_reset || ec == net::error::operation_aborted;
}

// The client's address and port, for the handler and the logs.
std::string peer_of(const tcp::socket& socket) {
  boost::system::error_code ec;
  const auto peer = socket.remote_endpoint(ec);
  return ec ? "?" : fmt::format("{}:{}", peer.address().to_string(), peer.port());
}

// How long a session waits for a request's head. Waiting for a request
// counts as keep-alive idle time when that is bounded. A probe in the
// reserve has a short while: slow ones must not fill it.
std::chrono::milliseconds header_wait(const ServerOptions& options, bool over_cap) {
  return std::min({options.header_timeout, options.keep_alive_idle.value_or(options.header_timeout),
                   over_cap ? ServerOptions::kProbeHeaderTimeout : options.header_timeout});
}

// How a request whose head could not be read is answered: only a client
// that started a request and stalled, or sent a malformed one, is owed one.
ErrorAnswer header_error(const boost::system::error_code& ec, bool timed_out,
                         std::size_t buffered) {
  if (timed_out)
    return buffered == 0 ? ErrorAnswer{} : ErrorAnswer{408, "timed out reading request headers"};
  if (client_went_away(ec)) return {};
  return {400, "malformed HTTP request: " + ec.message()};
}

// How a request whose body could not be read is answered.
ErrorAnswer body_error(const boost::system::error_code& ec, bool timed_out, const Request& request,
                       std::uint64_t limit) {
  if (ec == beast_http::error::body_limit)
    return {413, fmt::format("request body exceeds the limit of {} bytes", limit), true};
  if (timed_out) return {408, "timed out reading the request body", true};
  if (ec == beast_http::error::partial_message) {
    // The client shut its side mid-body (a half-close): it may still read.
    if (const auto& length = request.head.content_length)
      return {400,
              fmt::format("the request body ended after {} of its {} bytes "
                          "(Content-Length): the client closed its side",
                          request.body.size(), *length),
              true};
    return {400, "the request body ended before its last chunk: the client closed its side", true};
  }
  if (!client_went_away(ec)) return {400, "malformed request body: " + ec.message(), true};
  return {};
}

// Parses what the buffer holds of the body of the request whose head
// `parser` read: a small body usually came with the headers, and then no
// coroutine is started for it. What went wrong, if anything (status 0).
ErrorAnswer body_from_buffer(RequestParser& parser, beast::flat_buffer& buffer,
                             const Request& request, const ServerOptions& options) {
  parser.body_limit(options.body_limit);  // for chunked bodies of unknown length
  const auto ec = parse_buffered(parser, buffer);
  return ec ? body_error(ec, false, request, options.body_limit) : ErrorAnswer{};
}

// Reads the rest of the body from the socket within the body timeout.
awaitable<ErrorAnswer> read_body(tcp::socket& socket, beast::flat_buffer& buffer,
                                 RequestParser& parser, const Request& request,
                                 SocketDeadline& deadline, const ServerOptions& options) {
  deadline.expires_after(options.body_timeout);
  const auto ec = co_await read_until(socket, buffer, parser, ReadUntil::message);
  deadline.expires_never();
  co_return ec ? body_error(ec, deadline.expired(), request, options.body_limit) : ErrorAnswer{};
}

// Tells a client that sent "Expect: 100-continue" to send its body; false
// when it could not be told (the session ends).
awaitable<bool> send_continue(tcp::socket& socket, SocketDeadline& deadline,
                              const ServerOptions& options) {
  deadline.expires_after(options.write_timeout);
  const auto interim = net::buffer(kContinue);
  const auto ec = co_await write_all(socket, interim);
  deadline.expires_never();
  co_return !ec;
}

}  // namespace

std::string Server::State::keep_alive_header(const ServerOptions& o) {
  if (!o.advertise_keep_alive) return {};
  std::string value;
  if (o.keep_alive_idle)
    value = fmt::format(
        "timeout={}", std::chrono::duration_cast<std::chrono::seconds>(*o.keep_alive_idle).count());
  if (o.keep_alive_max > 0)
    value += fmt::format("{}max={}", value.empty() ? "" : ", ", o.keep_alive_max);
  return value;
}

Server::Server(net::any_io_executor executor, Handler& handler, ServerOptions options)
    : state_(std::make_shared<State>(executor, handler, std::move(options))) {}

Server::~Server() {
  stop_accepting();
}

Result<std::uint16_t> Server::listen() {
  const auto& o = state_->options;
  const std::string where = fmt::format("{}:{}", o.address, o.port);
  boost::system::error_code ec;
  auto address = net::ip::make_address(o.address, ec);
  if (ec) return Error{fmt::format("listen address '{}' is not an IP address", o.address)};
  tcp::endpoint endpoint(address, o.port);
  auto& acceptor = state_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) set_cloexec(acceptor.native_handle());
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (ec == net::error::address_in_use) return Error{where + " is already in use"};
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Error{fmt::format("cannot listen on {}: {}", where, ec.message())};
  if (state_->spare_fd < 0) state_->spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  return acceptor.local_endpoint().port();
}

void Server::start() {
  net::co_spawn(state_->executor, state_->accept_loop(), net::detached);
}

void Server::stop_accepting() {
  boost::system::error_code ec;
  state_->acceptor.close(ec);
}

std::size_t Server::active_requests() const {
  return state_->active.load();
}

awaitable<void> Server::State::accept_loop() {
  auto self = shared_from_this();
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(use_tuple);
    if (ec == net::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) {
      co_await accept_failed(ec);
      continue;
    }
    set_cloexec(socket.native_handle());
    if (accept_failures > 0) {
      spdlog::info("accepting connections again after {} failed accept(s)", accept_failures);
      accept_failures = 0;
    }
    ++connections;
    heap_trimmer.opened(connections);
    // The probe reserve counts sessions only: refusals lingering at the cap
    // (at most kMaxLingeringRefusals) must not crowd the probes out.
    const std::size_t reserve = options.probe_paths.empty() ? 0 : ServerOptions::kProbeReserve;
    if (options.max_connections > 0 &&
        connections - lingering_refusals > options.max_connections + reserve) {
      net::co_spawn(executor, refuse(std::move(socket)), net::detached);
      continue;
    }
    const bool over_cap = options.max_connections > 0 && connections > options.max_connections;
    socket.set_option(tcp::no_delay(true), ec);
    net::co_spawn(executor, session(std::move(socket), over_cap), net::detached);
  }
}

// A failed accept leaves the connection in the backlog, so retrying at once
// would spin. Out of descriptors, the spare one is given up for a moment to
// take the waiting connection and answer it 503; then the loop backs off,
// doubling up to a second while accepts keep failing. Logged once per
// episode, not per failure.
awaitable<void> Server::State::accept_failed(const boost::system::error_code& ec) {
  if (accept_failures++ == 0)
    spdlog::warn("accept failed: {}; {}backing off until it succeeds", ec.message(),
                 out_of_descriptors(ec) ? "answering waiting connections 503 and " : "");
  if (out_of_descriptors(ec)) shed_pending();
  const auto pause = std::min<std::chrono::milliseconds>(
      std::chrono::milliseconds(5 << std::min<std::size_t>(accept_failures, 8)), kAcceptBackoffMax);
  net::steady_timer timer(executor, pause);
  co_await timer.async_wait(use_tuple);
}

void Server::State::shed_pending() {
  if (spare_fd < 0) return;
  ::close(spare_fd);
  spare_fd = -1;
  const int fd =
      ::accept4(acceptor.native_handle(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd >= 0) {
    // The request is usually there already: reading it first means the close
    // below sends a FIN, not a reset that could destroy the answer.
    char scratch[16384];
    while (::recv(fd, scratch, sizeof scratch, MSG_DONTWAIT) > 0) {
    }
    const std::string bytes = refusal_bytes();
    [[maybe_unused]] const auto sent =
        ::send(fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    ::shutdown(fd, SHUT_WR);
    ::close(fd);
  }
  spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

std::string Server::State::refusal_bytes() {
  Response r = handler.protocol_error(503, std::string(kAtTheCap), {});
  return response_head(r.status, 11, r.headers, options.server_name,
                       Framing::content_length(r.body.size()), /*keep_alive=*/false) +
         r.body;
}

void Server::State::note_refused() {
  if (refused++ == 0)
    spdlog::warn(
        "{} client connections open (max_connections): new connections get 503 until some close",
        options.max_connections);
}

// Past max_connections and the probe reserve: 503 without reading the
// request, then close.
awaitable<void> Server::State::refuse(tcp::socket socket) {
  auto self = shared_from_this();
  note_refused();
  SocketDeadline deadline(executor, [&socket] {
    boost::system::error_code cancel_ec;
    socket.cancel(cancel_ec);
  });
  const std::string bytes = refusal_bytes();
  deadline.expires_after(options.write_timeout);
  const auto wec = co_await write_all(socket, net::buffer(bytes));
  deadline.expires_never();
  if (!wec) co_await close_refused(socket, deadline);
  boost::system::error_code ec;
  socket.close(ec);
  connection_closed();
}

awaitable<void> Server::State::close_refused(tcp::socket& socket, SocketDeadline& deadline) {
  if (lingering_refusals < kMaxLingeringRefusals) {
    ++lingering_refusals;
    co_await linger_close(socket, deadline);
    --lingering_refusals;
  }
  boost::system::error_code ec;
  socket.close(ec);
}

void Server::State::connection_closed() {
  --connections;
  heap_trimmer.closed(connections);
  if (refused > 0 && connections < options.max_connections) {
    spdlog::info("below max_connections again; {} connection(s) were refused", refused);
    refused = 0;
  }
}

std::unique_ptr<Response> Server::State::screen(RequestHead& head) {
  std::optional<Response> early = handler.screen(head);
  return early ? std::make_unique<Response>(std::move(*early)) : nullptr;
}

// The error's Response (its Headers alone are some 450 bytes) lives in this
// coroutine's frame while it is written, not in the session's: every local
// of the session coroutine is in its frame for as long as the connection is
// open, and 5,000 idle streams must fit in 100 MiB (docs/reliability.md).
awaitable<void> Server::State::answer_error(tcp::socket& socket, SocketDeadline& deadline,
                                            int status, std::string message, unsigned version,
                                            std::string_view path) {
  co_await write_response(socket, deadline, watches, options,
                          handler.protocol_error(status, std::move(message), path), version);
}

awaitable<void> Server::State::session(tcp::socket socket, bool over_cap) {
  // Every local here, and every temporary of a co_await, is in the
  // coroutine's frame for as long as the connection is open, an open
  // stream's included (docs/reliability.md, "Idle streams"): the parser
  // fills `request` in place, a screened request's answer is on the heap,
  // and the error answers are given in one place after the loop, each built
  // in a coroutine of its own (answer_error).
  auto self = shared_from_this();
  struct Open {
    State& state;
    ~Open() { state.connection_closed(); }
  } open{*this};
  const std::string remote = peer_of(socket);
  // A read that times out is cancelled, not closed, so a stalled client can
  // still be told 408; a write that times out fails and ends the session.
  SocketDeadline deadline(executor, [&socket] {
    boost::system::error_code cancel_ec;
    socket.cancel(cancel_ec);
  });
  // Outside the loop: it may already hold the start of a pipelined request.
  beast::flat_buffer buffer;
  Request request;        // the one being read, then handled (lent to the handler)
  unsigned version = 11;  // the request's HTTP version: 10 or 11
  bool answered = false;  // whether a request was answered on this connection
  unsigned requests = 0;  // read on this connection, for keep_alive_max
  const auto header_timeout = header_wait(options, over_cap);
  ErrorAnswer failure;  // what the connection ends with

  for (;;) {
    request = Request();
    version = 11;
    RequestParser parser(request);  // fresh per message
    parser.header_limit(64 * 1024);
    // The limit is applied after the headers, so an oversized Content-Length
    // gets a 413 (below) rather than a parse error.
    parser.body_limit(std::nullopt);

    // After an answer the next request is rarely there yet (let_loop_run).
    const bool detoured =
        answered && buffer.size() == 0 && active.load(std::memory_order_relaxed) > 0;
    if (detoured) co_await let_loop_run(socket);
    boost::system::error_code read_ec;
    if (!read_until_now(socket, buffer, parser, ReadUntil::header, detoured, read_ec)) {
      deadline.expires_after(header_timeout);
      read_ec = co_await read_until(socket, buffer, parser, ReadUntil::header);
      deadline.expires_never();
    }
    if (read_ec) {
      failure = header_error(read_ec, deadline.expired(), buffer.size());
      break;
    }

    RequestHead& head = request.head;
    if (auto cl = parser.content_length()) head.content_length = *cl;
    head.remote = remote;
    version = parser.version();

    failure = check_head(head, version, over_cap);
    if (failure.status != 0) break;
    if (auto early = screen(head)) {
      co_await write_response(socket, deadline, watches, options, std::move(*early), version);
      break;
    }
    if (auto expect = head.headers.find("expect"); expect && iequals(*expect, "100-continue")) {
      const bool told = co_await send_continue(socket, deadline, options);
      if (!told) break;
    }
    failure = body_from_buffer(parser, buffer, request, options);
    if (failure.status == 0 && !parser.is_done())
      failure = co_await read_body(socket, buffer, parser, request, deadline, options);
    if (failure.status != 0) break;

    ++requests;
    const bool last = options.keep_alive_max > 0 && requests >= options.keep_alive_max;
    SessionExchange exchange(socket, deadline, watches, options, version,
                             parser.keep_alive() && !last && !over_cap, keep_alive_value);
    // What the request left in the buffer is the next one's start; an empty
    // buffer is given back while the request is handled (an open stream
    // would hold it for nothing) and taken again for the next request.
    if (buffer.size() == 0) buffer.shrink_to_fit();
    ++active;
    co_await handler.handle(request, exchange);
    --active;
    if (exchange.aborted()) co_return;  // the socket is closed already
    if (!exchange.started()) {
      failure = {500, "the handler produced no response", false, false};
      break;
    }
    if (!exchange.reusable()) break;
    answered = true;
  }
  co_await end_session(socket, deadline, std::move(failure), request, version);
}

ErrorAnswer Server::State::check_head(const RequestHead& head, unsigned version, bool over_cap) {
  if (over_cap &&
      (head.method != "GET" || std::find(options.probe_paths.begin(), options.probe_paths.end(),
                                         head.path()) == options.probe_paths.end())) {
    note_refused();
    return {503, std::string(kAtTheCap), false, true, true};
  }
  if (auto bad = check_request_framing(head.headers, version))
    return {bad->status, std::move(bad->message), true};
  if (head.content_length && *head.content_length > options.body_limit)
    return {413,
            fmt::format("request body is {} bytes; the limit is {} bytes", *head.content_length,
                        options.body_limit),
            true};
  return {};
}

awaitable<void> Server::State::end_session(tcp::socket& socket, SocketDeadline& deadline,
                                           ErrorAnswer failure, Request& request,
                                           unsigned version) {
  if (failure.status != 0) {
    // Named, not a conditional inside the co_await: GCC 12 destroys such a
    // temporary twice in a coroutine.
    const std::string_view path = failure.names_path ? request.head.path() : std::string_view();
    co_await answer_error(socket, deadline, failure.status, std::move(failure.message), version,
                          path);
  }
  request = Request();  // a connection that lingers holds no body
  if (failure.refusal) {
    co_await close_refused(socket, deadline);
  } else if (failure.status != 0 && failure.linger) {
    co_await linger_close(socket, deadline);
  } else {
    boost::system::error_code ec;
    socket.shutdown(tcp::socket::shutdown_send, ec);
    socket.close(ec);
  }
}

}  // namespace switchyard::http
