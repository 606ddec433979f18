// libFuzzer target for the HTTP server as the gateway runs it: any byte
// string, written in pieces by a real client over loopback to http::Server,
// whose handler answers by target (a whole response, a chunked stream, an
// early refusal before the body). The server must answer or close, and the
// client must see the connection end: never a crash, a hang or a leak.
// Build and run: `make fuzz FUZZ_TARGETS=http_server` (docs/reliability.md).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "http/server.h"

namespace {

namespace net = boost::asio;
using namespace switchyard::http;

class FuzzHandler final : public Handler {
 public:
  std::optional<Response> screen(RequestHead& head) override {
    if (head.path().starts_with("/deny")) return json_response(401, R"({"error":"no"})");
    return std::nullopt;
  }
  net::awaitable<void> handle(Request& request, Exchange& exchange) override {
    if (request.head.path().starts_with("/stream")) {
      Headers headers;
      headers.add("Content-Type", "text/event-stream");
      if (!co_await exchange.start_stream(200, std::move(headers))) co_return;
      if (!co_await exchange.send_chunk("data: {}\n\n")) co_return;
      if (!co_await exchange.send_chunk(request.body)) co_return;
      co_await exchange.end_stream();
      co_return;
    }
    co_await exchange.respond(json_response(200, std::move(request.body)));
  }
  Response protocol_error(int status, std::string message, std::string_view) override {
    return json_response(status, "{\"error\":\"" + std::to_string(message.size()) + "\"}");
  }
};

struct World {
  net::io_context io{1};
  FuzzHandler handler;
  std::unique_ptr<Server> server;
  std::uint16_t port = 0;
  World() {
    spdlog::set_level(spdlog::level::off);
    ServerOptions options;
    options.port = 0;
    options.body_limit = 1 << 20;
    options.header_timeout = std::chrono::seconds(2);
    options.body_timeout = std::chrono::seconds(2);
    options.write_timeout = std::chrono::seconds(2);
    options.max_connections = 64;
    server = std::make_unique<Server>(io.get_executor(), handler, options);
    auto bound = server->listen();
    if (!bound) std::abort();
    port = *bound;
    server->start();
  }
};

net::awaitable<void> client(std::uint16_t port, std::string_view input, std::size_t piece,
                            bool& ended) {
  net::ip::tcp::socket socket(co_await net::this_coro::executor);
  co_await socket.async_connect({net::ip::address_v4::loopback(), port}, net::use_awaitable);
  boost::system::error_code ec;
  for (std::size_t at = 0; at < input.size() && !ec; at += piece) {
    const auto part = input.substr(at, piece);
    std::tie(ec, std::ignore) = co_await net::async_write(
        socket, net::buffer(part.data(), part.size()), net::as_tuple(net::use_awaitable));
  }
  socket.shutdown(net::ip::tcp::socket::shutdown_send, ec);
  // Read until the server closes: every request it took got its answer.
  std::string sink(16 * 1024, '\0');
  for (;;) {
    auto [rec, n] =
        co_await socket.async_read_some(net::buffer(sink), net::as_tuple(net::use_awaitable));
    if (rec) break;
  }
  ended = true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static World world;
  if (size < 1) return 0;
  // The first byte picks the piece size, so pipelined and split requests
  // are both covered.
  const std::size_t piece = 1 + data[0] % 64;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  bool ended = false;
  net::co_spawn(world.io, client(world.port, input, piece, ended), net::detached);
  // The server's own timeouts (2 s) end any connection it keeps; far past
  // them, the server hangs.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!ended && std::chrono::steady_clock::now() < deadline)
    world.io.run_one_for(std::chrono::milliseconds(100));
  if (!ended) std::abort();
  // Let the server's session finish with the connection before the next input.
  while (world.server->active_requests() > 0 && std::chrono::steady_clock::now() < deadline)
    world.io.run_one_for(std::chrono::milliseconds(10));
  world.io.poll();
  return 0;
}
