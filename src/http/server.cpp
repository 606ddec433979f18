#include "http/server.h"

#include <atomic>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "http/beast_glue.h"

namespace switchyard::http {

struct Server::State : std::enable_shared_from_this<Server::State> {
  State(net::any_io_executor ex, Handler& h, ServerOptions o)
      : executor(ex), handler(h), options(std::move(o)), acceptor(ex) {}

  awaitable<void> accept_loop();
  awaitable<void> session(tcp::socket socket);

  // Constant after construction.
  net::any_io_executor executor;
  Handler& handler;
  const ServerOptions options;
  // Owned by the accept loop.
  tcp::acceptor acceptor;
  // Updated by sessions; read by drain logic on any thread.
  std::atomic<std::size_t> active{0};
};

namespace {

// The session's implementation of Exchange. Lives on the session coroutine's
// frame for the duration of one request.
class SessionExchange final : public Exchange {
 public:
  SessionExchange(beast::tcp_stream& stream, const ServerOptions& options, unsigned version,
                  bool keep_alive)
      : stream_(stream), options_(options), version_(version), keep_alive_(keep_alive) {}

  awaitable<bool> respond(Response response) override {
    beast_http::response<beast_http::string_body> res{
        static_cast<beast_http::status>(response.status), version_};
    res.set(beast_http::field::server, options_.server_name);
    // A handler may end the connection after this response.
    if (auto c = response.headers.find("connection"); c && iequals(*c, "close"))
      keep_alive_ = false;
    response.headers.remove("connection");
    copy_headers(response.headers, res);
    res.body() = std::move(response.body);
    res.keep_alive(keep_alive_);
    res.prepare_payload();
    started_ = true;
    stream_.expires_after(options_.write_timeout);
    auto [ec, n] = co_await beast_http::async_write(stream_, res, use_tuple);
    ok_ = !ec;
    co_return ok_;
  }

  awaitable<bool> start_stream(int status, Headers headers) override {
    beast_http::response<beast_http::empty_body> res{static_cast<beast_http::status>(status),
                                                     version_};
    res.set(beast_http::field::server, options_.server_name);
    copy_headers(headers, res);
    res.keep_alive(keep_alive_);
    res.chunked(true);
    started_ = true;
    streaming_ = true;
    beast_http::response_serializer<beast_http::empty_body> sr{res};
    stream_.expires_after(options_.write_timeout);
    auto [ec, n] = co_await beast_http::async_write_header(stream_, sr, use_tuple);
    ok_ = !ec;
    co_return ok_;
  }

  awaitable<bool> send_chunk(std::string_view data) override {
    if (!ok_) co_return false;
    if (data.empty()) co_return true;  // an empty chunk would end the body
    stream_.expires_after(options_.write_timeout);
    const auto chunk = beast_http::make_chunk(net::buffer(data.data(), data.size()));
    auto [ec, n] = co_await net::async_write(stream_, chunk, use_tuple);
    ok_ = !ec;
    co_return ok_;
  }

  awaitable<bool> end_stream() override {
    if (!ok_) co_return false;
    stream_.expires_after(options_.write_timeout);
    const auto last = beast_http::make_chunk_last();
    auto [ec, n] = co_await net::async_write(stream_, last, use_tuple);
    ok_ = !ec;
    streaming_ = false;
    co_return ok_;
  }

  awaitable<bool> until_client_gone() override {
    auto& socket = stream_.socket();
    auto [ec] = co_await socket.async_wait(tcp::socket::wait_read, use_tuple);
    if (ec == net::error::operation_aborted) co_return false;
    if (ec) co_return true;  // the connection failed
    boost::system::error_code avail_ec;
    if (socket.available(avail_ec) == 0 || avail_ec) co_return true;  // orderly close
    // Readable with data (a pipelined request): the client is still there.
    net::steady_timer forever(socket.get_executor(), net::steady_timer::time_point::max());
    co_await forever.async_wait(use_tuple);
    co_return false;
  }

  bool started() const override { return started_; }

  void abort_connection() override {
    boost::system::error_code ec;
    stream_.socket().set_option(net::socket_base::linger(true, 0), ec);
    stream_.close();
    ok_ = false;
    aborted_ = true;
  }

  // Whether the handler reset the connection: nothing more may be written.
  bool aborted() const { return aborted_; }
  // Whether the connection can carry another request.
  bool reusable() const { return ok_ && keep_alive_ && !streaming_; }

 private:
  beast::tcp_stream& stream_;
  const ServerOptions& options_;
  unsigned version_;
  bool keep_alive_;
  bool started_ = false;
  bool streaming_ = false;
  bool ok_ = true;
  bool aborted_ = false;
};

// A deadline for one read that cancels it but leaves the socket open, so a
// stalled client can still be told 408. (Beast's stream deadline closes the
// socket.)
class ReadDeadline {
 public:
  ReadDeadline(beast::tcp_stream& stream, std::chrono::milliseconds timeout)
      : timer_(stream.get_executor(), timeout) {
    stream.expires_never();
    timer_.async_wait([&stream, expired = expired_](const boost::system::error_code& ec) {
      if (ec) return;  // cancelled: the read finished first
      *expired = true;
      stream.socket().cancel();
    });
  }
  ~ReadDeadline() { timer_.cancel(); }
  bool expired() const { return *expired_; }

 private:
  std::shared_ptr<bool> expired_ = std::make_shared<bool>(false);
  net::steady_timer timer_;
};

// Writes a response outside any exchange (protocol errors) and reports success.
awaitable<bool> write_response(beast::tcp_stream& stream, const ServerOptions& options,
                               Response response, unsigned version) {
  SessionExchange ex(stream, options, version, /*keep_alive=*/false);
  const bool ok = co_await ex.respond(std::move(response));
  co_return ok;
}

}  // namespace

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
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (ec == net::error::address_in_use) return Error{where + " is already in use"};
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Error{fmt::format("cannot listen on {}: {}", where, ec.message())};
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
      // Out of descriptors and the like: log, pause briefly, keep serving.
      spdlog::warn("accept failed: {}", ec.message());
      net::steady_timer pause(executor, std::chrono::milliseconds(50));
      co_await pause.async_wait(use_tuple);
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    net::co_spawn(executor, session(std::move(socket)), net::detached);
  }
}

awaitable<void> Server::State::session(tcp::socket socket) {
  auto self = shared_from_this();
  boost::system::error_code ec;
  const auto peer = socket.remote_endpoint(ec);
  const std::string remote =
      ec ? "?" : fmt::format("{}:{}", peer.address().to_string(), peer.port());
  beast::tcp_stream stream(std::move(socket));
  // Outside the loop: it may already hold the start of a pipelined request.
  beast::flat_buffer buffer;

  for (;;) {
    beast_http::request_parser<beast_http::string_body> parser;  // fresh per message
    parser.header_limit(64 * 1024);
    // The limit is applied after the headers, so an oversized Content-Length
    // gets a 413 (below) rather than a parse error.
    parser.body_limit(boost::none);

    std::optional<ReadDeadline> header_deadline(std::in_place, stream, options.header_timeout);
    auto [read_ec, n] = co_await beast_http::async_read_header(stream, buffer, parser, use_tuple);
    const bool header_timed_out = header_deadline->expired();
    header_deadline.reset();
    if (read_ec) {
      // Only a client that started a request and stalled is owed an answer.
      if (header_timed_out && buffer.size() == 0) break;
      if (!header_timed_out &&
          (read_ec == beast_http::error::end_of_stream || read_ec == net::error::eof ||
           read_ec == net::error::connection_reset || read_ec == net::error::operation_aborted))
        break;
      Response error =
          header_timed_out
              ? handler.protocol_error(408, "timed out reading request headers")
              : handler.protocol_error(400, "malformed HTTP request: " + read_ec.message());
      co_await write_response(stream, options, std::move(error), 11);
      break;
    }

    auto& msg = parser.get();
    RequestHead head;
    head.method = std::string(msg.method_string());
    head.target = std::string(msg.target());
    head.headers = to_headers(msg);
    if (auto cl = parser.content_length()) head.content_length = *cl;
    head.remote = remote;
    const unsigned version = msg.version();

    if (head.content_length && *head.content_length > options.body_limit) {
      Response error =
          handler.protocol_error(413, fmt::format("request body is {} bytes; the limit is {} bytes",
                                                  *head.content_length, options.body_limit));
      co_await write_response(stream, options, std::move(error), version);
      break;
    }
    std::optional<Response> early = handler.screen(head);
    if (early) {
      co_await write_response(stream, options, std::move(*early), version);
      break;
    }
    if (auto expect = head.headers.find("expect"); expect && iequals(*expect, "100-continue")) {
      beast_http::response<beast_http::empty_body> cont{beast_http::status::continue_, version};
      stream.expires_after(options.write_timeout);
      auto [wec, wn] = co_await beast_http::async_write(stream, cont, use_tuple);
      if (wec) break;
    }

    parser.body_limit(options.body_limit);  // for chunked bodies of unknown length
    std::optional<ReadDeadline> body_deadline(std::in_place, stream, options.body_timeout);
    auto [body_ec, bn] = co_await beast_http::async_read(stream, buffer, parser, use_tuple);
    const bool body_timed_out = body_deadline->expired();
    body_deadline.reset();
    if (body_ec) {
      std::optional<Response> error;
      if (body_ec == beast_http::error::body_limit)
        error = handler.protocol_error(
            413, fmt::format("request body exceeds the limit of {} bytes", options.body_limit));
      else if (body_timed_out)
        error = handler.protocol_error(408, "timed out reading the request body");
      if (error) co_await write_response(stream, options, std::move(*error), version);
      break;
    }

    Request request{std::move(head), std::move(parser.get().body())};
    SessionExchange exchange(stream, options, version, parser.keep_alive());
    ++active;
    co_await handler.handle(std::move(request), exchange);
    --active;
    if (exchange.aborted()) co_return;  // the socket is closed already
    if (!exchange.started()) {
      Response error = handler.protocol_error(500, "the handler produced no response");
      co_await exchange.respond(std::move(error));
      break;
    }
    if (!exchange.reusable()) break;
  }
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream.close();
}

}  // namespace switchyard::http
