#include "tenancy/redis_client.h"

#include <boost/asio.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <hiredis/async.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "tenancy/hiredis_reply.h"

namespace switchyard::tenancy {

namespace net = boost::asio;
using net::awaitable;

// One hiredis connection and the Asio side of it. hiredis owns the socket
// (it closes it when the context is freed); the descriptor only waits on it.
// Handlers hold a shared_ptr, so the Connection outlives every wait armed on
// it; `ac` is null once hiredis has freed the context.
struct RedisClient::Connection : std::enable_shared_from_this<Connection> {
  explicit Connection(net::any_io_executor ex) : socket(ex), changed(ex) {}

  redisAsyncContext* ac = nullptr;
  net::posix::stream_descriptor socket;
  net::steady_timer changed;  // cancelled when connected or gone
  bool want_read = false, want_write = false;
  bool read_armed = false, write_armed = false;
  bool connected = false;
  bool gone = false;
  std::string error;

  void mark_gone(std::string why) {
    if (gone) return;
    gone = true;
    connected = false;
    if (error.empty()) error = std::move(why);
    changed.cancel();
  }
  void arm_read() {
    if (read_armed || !want_read || !ac) return;
    read_armed = true;
    socket.async_wait(net::posix::stream_descriptor::wait_read,
                      [self = shared_from_this()](boost::system::error_code ec) {
                        self->read_armed = false;
                        if (ec || !self->ac) return;
                        if (self->want_read) redisAsyncHandleRead(self->ac);
                        self->arm_read();
                      });
  }
  void arm_write() {
    if (write_armed || !want_write || !ac) return;
    write_armed = true;
    socket.async_wait(net::posix::stream_descriptor::wait_write,
                      [self = shared_from_this()](boost::system::error_code ec) {
                        self->write_armed = false;
                        if (ec || !self->ac) return;
                        if (self->want_write) redisAsyncHandleWrite(self->ac);
                        self->arm_write();
                      });
  }
  // Frees the context now (hiredis answers its pending callbacks with no
  // reply, then calls cleanup); never from inside a hiredis callback.
  void close(const std::string& why) {
    mark_gone(why);
    if (!ac) return;
    redisAsyncContext* c = ac;
    release_socket();  // before hiredis closes the descriptor
    redisAsyncFree(c);
    ac = nullptr;
  }
  void release_socket() {
    // hiredis closes the descriptor; Asio must not close it again.
    if (!socket.is_open()) return;
    boost::system::error_code ignored;
    socket.cancel(ignored);
    (void)socket.release();
  }

  static Connection* of(void* data) { return static_cast<Connection*>(data); }
  static void add_read(void* d) {
    if (!d) return;
    of(d)->want_read = true;
    of(d)->arm_read();
  }
  static void del_read(void* d) {
    if (d) of(d)->want_read = false;
  }
  static void add_write(void* d) {
    if (!d) return;
    of(d)->want_write = true;
    of(d)->arm_write();
  }
  static void del_write(void* d) {
    if (d) of(d)->want_write = false;
  }
  static void cleanup(void* d) {
    if (!d) return;
    Connection* c = of(d);
    c->ac = nullptr;
    c->want_read = c->want_write = false;
    c->release_socket();
    c->mark_gone("connection closed");
  }
  static void connected_cb(const redisAsyncContext* ac, int status) {
    if (!ac->ev.data) return;
    Connection* c = of(ac->ev.data);
    if (status != REDIS_OK) {
      c->error = ac->errstr[0] ? ac->errstr : "connect failed";
      c->mark_gone(c->error);
      return;
    }
    c->connected = true;
    c->changed.cancel();
  }
  static void disconnected_cb(const redisAsyncContext* ac, int status) {
    if (!ac->ev.data) return;
    Connection* c = of(ac->ev.data);
    c->mark_gone(status == REDIS_OK ? "connection closed"
                                    : (ac->errstr[0] ? ac->errstr : "connection lost"));
  }
};

RedisReply from_hiredis(const redisReply* r) {
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.type = RedisReply::Type::string;
      break;
    case REDIS_REPLY_STATUS:
      out.type = RedisReply::Type::status;
      break;
    case REDIS_REPLY_ERROR:
      out.type = RedisReply::Type::error;
      break;
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::integer;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::array;
      for (std::size_t i = 0; i < r->elements; ++i)
        out.elements.push_back(from_hiredis(r->element[i]));
      break;
    default:
      break;
  }
  if (r->str && r->type != REDIS_REPLY_ARRAY) out.str.assign(r->str, r->len);
  return out;
}

namespace {

// A command waiting for its reply. hiredis holds a heap shared_ptr to it as
// the callback's privdata, and always calls the callback once (with no reply
// when the connection goes), which deletes it.
struct Pending {
  explicit Pending(net::any_io_executor ex) : timer(ex) {}
  net::steady_timer timer;
  bool done = false;
  Result<RedisReply> result = Error{"no reply"};
};

void on_reply(redisAsyncContext* ac, void* reply, void* privdata) {
  auto* holder = static_cast<std::shared_ptr<Pending>*>(privdata);
  Pending& p = **holder;
  if (reply)
    p.result = from_hiredis(static_cast<redisReply*>(reply));
  else
    p.result = Error{ac && ac->errstr[0] ? ac->errstr : "connection lost"};
  p.done = true;
  p.timer.cancel();
  delete holder;
}

}  // namespace

RedisClient::RedisClient(net::any_io_executor executor, RedisClientOptions options)
    : executor_(executor),
      options_(std::move(options)),
      address_(fmt::format(
          "{}:{}",
          options_.host.find(':') != std::string::npos ? "[" + options_.host + "]" : options_.host,
          options_.port)),
      wake_(executor) {}

RedisClient::~RedisClient() {
  stop();
}

void RedisClient::start() {
  if (started_) return;
  started_ = true;
  net::co_spawn(executor_, run(), net::detached);
}

void RedisClient::stop() {
  if (stopped_) return;
  stopped_ = true;
  alive_.reset();
  wake_.cancel();
  if (connection_) connection_->close("stopped");
  connection_.reset();
}

void RedisClient::set_up(bool up, std::string error) {
  last_error_ = up ? std::string() : std::move(error);
  if (up == up_) return;
  up_ = up;
  since_ = std::chrono::system_clock::now();
  if (on_state_) on_state_(up);
}

void RedisClient::drop(const std::string& why) {
  if (connection_) connection_->close(why);
}

awaitable<void> RedisClient::run() {
  const std::weak_ptr<char> alive = alive_;
  auto backoff = options_.backoff;
  while (alive.lock() && !stopped_) {
    std::string error = co_await connect_once();
    if (!alive.lock() || stopped_) co_return;
    if (error.empty() && !channels_.empty()) error = subscribe_on(*connection_);
    if (error.empty()) {
      backoff = options_.backoff;
      set_up(true, {});
      const auto conn = connection_;
      while (!conn->gone && alive.lock() && !stopped_) {
        conn->changed.expires_at(net::steady_timer::time_point::max());
        co_await conn->changed.async_wait(net::as_tuple(net::use_awaitable));
      }
      if (!alive.lock() || stopped_) co_return;
      error = conn->error.empty() ? "connection closed" : conn->error;
      conn->close(error);
    }
    set_up(false, error);
    wake_.expires_after(backoff);
    co_await wake_.async_wait(net::as_tuple(net::use_awaitable));
    backoff = std::min(backoff * 2, options_.backoff_max);
  }
}

awaitable<std::string> RedisClient::connect_once() {
  if (connection_) connection_->close("reconnecting");
  connection_.reset();
  // hiredis resolves names with a blocking getaddrinfo: give it an address.
  std::string ip = options_.host;
  boost::system::error_code ec;
  net::ip::make_address(ip, ec);
  if (ec) {
    net::ip::tcp::resolver resolver(executor_);
    auto [rec, results] = co_await resolver.async_resolve(
        options_.host, std::to_string(options_.port), net::as_tuple(net::use_awaitable));
    if (rec || results.empty())
      co_return fmt::format("cannot resolve {}: {}", options_.host,
                            rec ? rec.message() : "no address");
    ip = results.begin()->endpoint().address().to_string();
  }
  redisAsyncContext* ac = redisAsyncConnect(ip.c_str(), options_.port);
  if (!ac) co_return std::string("out of memory");
  if (ac->err) {
    std::string why = ac->errstr;
    redisAsyncFree(ac);
    co_return why;
  }
  auto conn = std::make_shared<Connection>(executor_);
  conn->ac = ac;
  conn->socket.assign(ac->c.fd, ec);
  if (ec) {
    conn->ac = nullptr;
    redisAsyncFree(ac);
    co_return "cannot watch the socket: " + ec.message();
  }
  ac->ev.data = conn.get();
  ac->ev.addRead = &Connection::add_read;
  ac->ev.delRead = &Connection::del_read;
  ac->ev.addWrite = &Connection::add_write;
  ac->ev.delWrite = &Connection::del_write;
  ac->ev.cleanup = &Connection::cleanup;
  redisAsyncSetDisconnectCallback(ac, &Connection::disconnected_cb);
  // Arms the first write wait: that is how hiredis notices the connect.
  redisAsyncSetConnectCallback(ac, &Connection::connected_cb);
  connection_ = conn;

  conn->changed.expires_after(options_.timeout);
  co_await conn->changed.async_wait(net::as_tuple(net::use_awaitable));
  if (!conn->connected) {
    const std::string why = conn->gone ? conn->error : "connect timed out";
    conn->close(why);
    co_return why;
  }
  if (options_.db != 0) {
    std::vector<std::string> select{"SELECT", std::to_string(options_.db)};
    auto selected = co_await send(conn, std::move(select));
    if (!selected || selected->is_error()) {
      const std::string why = fmt::format("SELECT {}: {}", options_.db,
                                          selected ? selected->str : selected.error().message);
      conn->close(why);
      co_return why;
    }
  }
  co_return std::string();
}

std::string RedisClient::subscribe_on(Connection& conn) {
  std::vector<const char*> argv{"SUBSCRIBE"};
  std::vector<std::size_t> lengths{9};
  for (const auto& c : channels_) {
    argv.push_back(c.data());
    lengths.push_back(c.size());
  }
  // hiredis keeps a subscription's callback for every message and calls it
  // with no reply when the context is freed, which stop() does before this
  // client is gone: `this` outlives every call.
  if (redisAsyncCommandArgv(conn.ac, &RedisClient::message_cb, this, static_cast<int>(argv.size()),
                            argv.data(), lengths.data()) != REDIS_OK) {
    const std::string why = conn.ac->errstr[0] ? conn.ac->errstr : "cannot subscribe";
    conn.close(why);
    return why;
  }
  return {};
}

void RedisClient::message_cb(redisAsyncContext*, void* reply, void* self) {
  const auto* r = static_cast<const redisReply*>(reply);
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3) return;
  const auto text = [](const redisReply* e) {
    return e->str ? std::string(e->str, e->len) : std::string();
  };
  auto* client = static_cast<RedisClient*>(self);
  if (text(r->element[0]) == "message" && client->on_message_)
    client->on_message_(text(r->element[1]), text(r->element[2]));
}

awaitable<Result<RedisReply>> RedisClient::command(std::vector<std::string> args) {
  // Not before the connection is up: until then it may not have SELECTed.
  if (!up_) co_return Error{last_error_.empty() ? "not connected" : last_error_};
  co_return co_await send(connection_, std::move(args));
}

awaitable<Result<RedisReply>> RedisClient::send(std::shared_ptr<Connection> conn,
                                                std::vector<std::string> args) {
  if (!conn || !conn->connected || !conn->ac)
    co_return Error{last_error_.empty() ? "not connected" : last_error_};
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  auto pending = std::make_shared<Pending>(executor_);
  auto* holder = new std::shared_ptr<Pending>(pending);
  const auto start = std::chrono::steady_clock::now();
  if (redisAsyncCommandArgv(conn->ac, &on_reply, holder, static_cast<int>(argv.size()), argv.data(),
                            lengths.data()) != REDIS_OK) {
    delete holder;
    co_return Error{conn->ac && conn->ac->errstr[0] ? conn->ac->errstr : "cannot send"};
  }
  const std::weak_ptr<char> alive = alive_;
  pending->timer.expires_after(options_.timeout);
  co_await pending->timer.async_wait(net::as_tuple(net::use_awaitable));
  if (!alive.lock()) co_return Error{"stopped"};
  if (!pending->done) {
    const auto why = fmt::format("no reply within {} ms", options_.timeout.count());
    conn->close(why);  // answers the pending callback, ours included
    pending->result = Error{why};
  }
  if (on_command_)
    on_command_(pending->result.ok(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  co_return std::move(pending->result);
}

}  // namespace switchyard::tenancy
