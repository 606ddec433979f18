// The key records shared through Redis (tenancy/key_records.h), followed on
// the gateway's I/O thread: loaded at start, reloaded within a second of a
// change (a message on the keys channel wakes it at once; a check of the
// change counter every `check_interval` catches a missed message up), and
// the records this gateway holds published where Redis lacks them or holds
// an older version: at start, when the held ones change, and whenever
// Redis's records change (a Redis restarted empty is filled again by the
// first gateway to see it). While Redis is unreachable the records last
// read are kept (KeyRegistry holds them). Single-threaded: the I/O thread.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tenancy/key_store.h"
#include "tenancy/redis_client.h"

namespace switchyard::tenancy {

class SharedKeys {
 public:
  // Commands go on `redis` (shared with the limits; it must outlive this).
  // With a `secret`, records are signed and unsigned ones ignored.
  SharedKeys(boost::asio::any_io_executor executor, RedisClient& redis, std::string secret = {},
             std::chrono::milliseconds check_interval = std::chrono::seconds(1));
  ~SharedKeys();  // stop()
  SharedKeys(const SharedKeys&) = delete;
  SharedKeys& operator=(const SharedKeys&) = delete;

  void start();
  void stop();
  // A record changed in Redis (its keys channel said so): check now.
  void changed();
  // The records this gateway holds (KeyRegistry::records()), published
  // where Redis lacks them at the next check.
  void set_local(std::vector<KeyRecord> local);
  // Redis's valid records, each time they change (the I/O thread).
  void on_records(std::function<void(const std::vector<KeyRecord>&)> fn) {
    on_records_ = std::move(fn);
  }

 private:
  boost::asio::awaitable<void> run();
  // false when Redis did not answer.
  boost::asio::awaitable<bool> publish();
  boost::asio::awaitable<bool> check();
  // Redis's copy of each record, decoded; unsigned or broken ones logged.
  std::vector<KeyRecord> decode_all(const RedisReply& all);

  // Constant after construction.
  boost::asio::any_io_executor executor_;
  RedisClient& redis_;
  const std::string secret_;
  const std::chrono::milliseconds check_interval_;
  // The I/O thread's.
  boost::asio::steady_timer wake_;
  std::vector<KeyRecord> local_;
  bool publish_pending_ = true;  // the held records changed
  bool check_pending_ = true;
  bool remote_changed_ = false;  // Redis's records changed since the last publish
  std::map<std::string, std::int64_t> remote_versions_;  // of Redis's valid records
  bool waiting_ = false;                                 // run() waits on wake_
  std::optional<std::int64_t> seen_version_;             // of the records last read
  std::size_t remote_count_ = 0;
  bool down_logged_ = false;
  bool started_ = false, stopped_ = false;
  std::function<void(const std::vector<KeyRecord>&)> on_records_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace switchyard::tenancy
