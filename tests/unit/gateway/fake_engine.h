// An engine on 127.0.0.1 (port 0) that answers every request with one
// scripted response after a delay, for tests of the forwarder.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <string>

namespace switchyard::gateway::testing_support {

class FakeEngine {
 public:
  FakeEngine(boost::asio::io_context& io, int status, std::string body,
             std::chrono::milliseconds delay = {}, std::string content_type = "application/json")
      : acceptor_(io, {boost::asio::ip::make_address("127.0.0.1"), 0}),
        status_(status),
        body_(std::move(body)),
        delay_(delay),
        content_type_(std::move(content_type)) {
    boost::asio::co_spawn(io, accept(), boost::asio::detached);
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  int requests = 0;  // requests read
  std::string last_body;

 private:
  boost::asio::awaitable<void> accept() {
    for (;;) {
      auto [ec, socket] =
          co_await acceptor_.async_accept(boost::asio::as_tuple(boost::asio::use_awaitable));
      if (ec) co_return;
      boost::asio::co_spawn(acceptor_.get_executor(), serve(std::move(socket)),
                            boost::asio::detached);
    }
  }
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket) {
    namespace http = boost::beast::http;
    constexpr auto tuple = boost::asio::as_tuple(boost::asio::use_awaitable);
    boost::beast::flat_buffer buffer;
    for (;;) {
      http::request<http::string_body> req;
      auto [rec, rn] = co_await http::async_read(socket, buffer, req, tuple);
      if (rec) co_return;
      ++requests;
      last_body = req.body();
      boost::asio::steady_timer wait(socket.get_executor(), delay_);
      co_await wait.async_wait(tuple);
      http::response<http::string_body> res{static_cast<http::status>(status_), 11};
      res.set(http::field::content_type, content_type_);
      res.body() = body_;
      res.prepare_payload();
      auto [wec, wn] = co_await http::async_write(socket, res, tuple);
      if (wec) co_return;
    }
  }

  boost::asio::ip::tcp::acceptor acceptor_;
  int status_;
  std::string body_;
  std::chrono::milliseconds delay_;
  std::string content_type_;
};

}  // namespace switchyard::gateway::testing_support
