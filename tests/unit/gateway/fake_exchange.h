// The client's side of an exchange, for tests of stages: records what the
// handler answered and never goes away.
#pragma once

#include <boost/asio.hpp>

#include <new>
#include <string>
#include <vector>

#include "http/exchange.h"

namespace switchyard::gateway::testing_support {

class FakeExchange final : public http::Exchange {
 public:
  boost::asio::awaitable<bool> respond(http::Response response) override {
    status = response.status;
    body = std::move(response.body);
    started_ = true;
    co_return true;
  }
  boost::asio::awaitable<bool> start_stream(int s, http::Headers h) override {
    co_return start_stream_now(s, std::move(h));
  }
  bool start_stream_now(int s, http::Headers) override {
    status = s;
    started_ = true;
    return true;
  }
  boost::asio::awaitable<bool> send_chunk(std::string_view data) override {
    chunks.emplace_back(data);
    co_return true;
  }
  boost::asio::awaitable<bool> end_stream() override {
    if (!flushed_) ++sent_unflushed;
    co_return true;
  }
  bool send_chunk_now(std::string_view data) override {
    if (++sends_now == short_of_memory_at) throw std::bad_alloc();
    if (!flushed_) ++sent_unflushed;
    chunks.emplace_back(data);
    flushed_ = !full_after_write;
    return true;
  }
  bool flushed() const override { return flushed_; }
  boost::asio::awaitable<bool> flush() override {
    if (!flushed_) ++flushes;
    flushed_ = true;
    co_return true;
  }
  // Never gone: waits until cancelled.
  boost::asio::awaitable<bool> until_client_gone() override {
    boost::asio::steady_timer forever(co_await boost::asio::this_coro::executor,
                                      boost::asio::steady_timer::time_point::max());
    co_await forever.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    co_return false;
  }
  void watch_client(std::function<void()>) override {}
  void unwatch_client() override {}
  bool started() const override { return started_; }
  void abort_connection() override {}

  int status = 0;
  std::string body;
  std::vector<std::string> chunks;
  // A client slow to read: every write leaves part of it for flush(), which
  // must then be awaited before anything else is sent (http/exchange.h).
  bool full_after_write = false;
  int flushes = 0;         // flush() calls that had something to write
  int sent_unflushed = 0;  // writes that did not wait for it
  // The gateway short of memory: the Nth send_chunk_now throws (0: none).
  int short_of_memory_at = 0;
  int sends_now = 0;

 private:
  bool started_ = false;
  bool flushed_ = true;
};

}  // namespace switchyard::gateway::testing_support
