// A Redis connection on the gateway's io_context: hiredis's async API, its
// socket driven by Asio (hiredis has event-loop adapters for libevent, libuv
// and others, none for Asio; this is that adapter). Nothing here blocks the
// I/O thread: the host is resolved asynchronously, hiredis only ever reads
// and writes when Asio says the socket is ready. The connection is
// re-established with backoff when it drops; up() says whether it is there.
// Single-threaded: the executor's thread only.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

struct redisAsyncContext;

namespace switchyard::tenancy {

struct RedisReply {
  enum class Type { nil, string, integer, array, status, error } type = Type::nil;
  long long integer = 0;
  std::string str;  // string, status and error replies
  std::vector<RedisReply> elements;

  bool is_error() const { return type == Type::error; }
};

struct RedisClientOptions {
  std::string host = "127.0.0.1";
  int port = 6379;
  int db = 0;  // SELECTed on each connection
  // Per connect and per command. A command without an answer by then counts
  // as a broken connection (hiredis cannot cancel one): it is closed and
  // re-established.
  std::chrono::milliseconds timeout{1000};
  // Between reconnect attempts: doubles from `backoff` up to `backoff_max`.
  std::chrono::milliseconds backoff{100};
  std::chrono::milliseconds backoff_max{2000};
};

class RedisClient {
 public:
  RedisClient(boost::asio::any_io_executor executor, RedisClientOptions options);
  ~RedisClient();  // stop()
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // Connects, and keeps reconnecting until stop().
  void start();
  void stop();

  bool up() const { return up_; }
  // When up() last changed (the construction until the first change).
  std::chrono::system_clock::time_point since() const { return since_; }
  // Why it is down (the last connect or connection error); empty while up.
  const std::string& last_error() const { return last_error_; }
  // "host:port", for messages.
  const std::string& address() const { return address_; }

  // One command, e.g. {"INCRBY", key, "3"}. An error when not connected, on
  // timeout or when the connection drops; a Redis error reply is a reply
  // (is_error()), which the caller judges.
  boost::asio::awaitable<Result<RedisReply>> command(std::vector<std::string> args);

  // Makes this a subscriber connection (before start()): every connection
  // SUBSCRIBEs to `channels`, and `fn` gets each message's channel and
  // payload. command() is not for such a connection (Redis refuses most
  // commands on it). Messages published while it was down are lost: the
  // subscriber catches up on its own when on_state() says up.
  void subscribe(std::vector<std::string> channels,
                 std::function<void(const std::string& channel, const std::string& message)> fn) {
    channels_ = std::move(channels);
    on_message_ = std::move(fn);
  }

  // Up and down transitions (not called for the state at start).
  void on_state(std::function<void(bool up)> fn) { on_state_ = std::move(fn); }
  // Every command: whether it got an answer, and how long it took.
  void on_command(std::function<void(bool ok, double seconds)> fn) { on_command_ = std::move(fn); }

  struct Connection;  // redis_client.cpp

 private:
  boost::asio::awaitable<void> run();
  // Empty when connected, else why not.
  boost::asio::awaitable<std::string> connect_once();
  boost::asio::awaitable<Result<RedisReply>> send(std::shared_ptr<Connection> conn,
                                                  std::vector<std::string> args);
  void set_up(bool up, std::string error);
  // Empty when subscribed, else why not.
  std::string subscribe_on(Connection& conn);
  static void message_cb(::redisAsyncContext* ac, void* reply, void* self);
  void drop(const std::string& why);

  // Constant after construction.
  boost::asio::any_io_executor executor_;
  const RedisClientOptions options_;
  const std::string address_;
  // The I/O thread's.
  std::shared_ptr<Connection> connection_;
  boost::asio::steady_timer wake_;  // the run loop's backoff and wait for a drop
  bool started_ = false;
  bool stopped_ = false;
  bool up_ = false;
  std::string last_error_ = "not connected yet";
  std::chrono::system_clock::time_point since_ = std::chrono::system_clock::now();
  std::vector<std::string> channels_;
  std::function<void(const std::string&, const std::string&)> on_message_;
  std::function<void(bool)> on_state_;
  std::function<void(bool, double)> on_command_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace switchyard::tenancy
