// A stream to a client that stops reading: what the socket does not take is
// kept and written in order once the client reads again (send_chunk_now and
// flush in exchange.h).
#include "http/server.h"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "http/body_decoder.h"

namespace switchyard::http {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::string chunk_of(int i) {
  return std::to_string(i) + ":" + std::string(64 * 1024, static_cast<char>('a' + i % 26)) + "\n";
}

// Streams 64 KiB chunks until the client's socket is full, then 8 more.
class StreamingHandler final : public Handler {
 public:
  boost::asio::awaitable<void> handle(Request&, Exchange& exchange) override {
    if (!co_await exchange.start_stream(200, {})) co_return;
    int more = 8;
    for (int i = 0; i < 2000 && more > 0; ++i) {
      if (!exchange.send_chunk_now(chunk_of(i))) co_return;
      sent.append(chunk_of(i));
      if (backlogged) --more;
      if (!exchange.flushed()) {
        {
          std::lock_guard lock(mutex);
          backlogged = true;
        }
        filled.notify_all();
        if (!co_await exchange.flush()) co_return;
      }
    }
    co_await exchange.end_stream();
  }
  Response protocol_error(int status, std::string message, std::string_view) override {
    return Response{status, {}, std::move(message)};
  }

  // Set when the client's socket was first found full.
  std::mutex mutex;
  std::condition_variable filled;
  bool backlogged = false;
  std::string sent;
};

TEST(ServerStream, WhatTheClientsSocketCannotTakeIsSentLaterInOrder) {
  boost::asio::io_context io;
  StreamingHandler handler;
  ServerOptions options;
  options.port = 0;
  Server server(io.get_executor(), handler, options);
  const auto port = server.listen();
  ASSERT_TRUE(port) << port.error().message;
  server.start();

  std::atomic<bool> client_done{false};
  std::string body;
  std::string client_error;
  std::thread client([&] {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    const int small = 4096;
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    const timeval timeout{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(*port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      client_error = "connect failed";
    } else {
      const std::string request = "GET /stream HTTP/1.1\r\nHost: x\r\n\r\n";
      ::send(fd, request.data(), request.size(), 0);
      // Reads nothing until the server has found the socket full.
      {
        std::unique_lock lock(handler.mutex);
        handler.filled.wait_for(lock, 10s, [&] { return handler.backlogged; });
      }
      std::string wire;
      char buf[65536];
      BodyDecoder decoder = BodyDecoder::chunked();
      std::size_t head_end = std::string::npos;
      std::size_t at = 0;
      while (!decoder.done() && !decoder.error()) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) {
          client_error = "the stream ended early";
          break;
        }
        wire.append(buf, static_cast<std::size_t>(n));
        if (head_end == std::string::npos) {
          head_end = wire.find("\r\n\r\n");
          if (head_end == std::string::npos) continue;
          at = head_end + 4;
        }
        for (;;) {
          const auto step = decoder.next(std::string_view(wire).substr(at));
          body.append(step.data);
          at += step.used;
          if (step.data.empty()) break;
        }
      }
      if (decoder.error()) client_error = decoder.error();
    }
    ::close(fd);
    client_done = true;
  });
  const auto give_up = Clock::now() + 30s;
  while (!client_done && Clock::now() < give_up) io.run_for(10ms);
  server.stop_accepting();
  io.run_for(50ms);
  client.join();
  ASSERT_TRUE(client_done);
  {
    std::lock_guard lock(handler.mutex);
    EXPECT_TRUE(handler.backlogged) << "the client's socket never filled";
  }
  EXPECT_EQ(client_error, "");
  EXPECT_EQ(body.size(), handler.sent.size());
  EXPECT_TRUE(body == handler.sent) << "bytes lost, doubled or out of order";
}

}  // namespace
}  // namespace switchyard::http
