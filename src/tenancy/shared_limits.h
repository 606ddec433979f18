// Per-key limits shared by every gateway that uses the same Redis
// (docs/keys.md, "Several gateways"): rpm / tpm / tokens per day in one
// script per check, running slots and session seats as leases in sorted
// sets scored by their expiry, renewed while held, so a crashed gateway's
// leases free within the lease TTL. A heartbeat counts the gateways, for
// the `redis_down: local` split. Single-threaded: the I/O thread only.
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

#include "common/result.h"
#include "tenancy/key_limits.h"
#include "tenancy/limiter.h"
#include "tenancy/limits.h"
#include "tenancy/redis_client.h"
#include "tenancy/redis_scripts.h"

namespace switchyard::tenancy {

struct SharedLimitsOptions {
  RedisClientOptions redis;
  // A held lease's life unless renewed; renewed every third of it.
  std::chrono::milliseconds lease_ttl{10000};
  // This gateway's name in the leases and the heartbeat; unique per process.
  std::string gateway_id;
  // Only for the log line of a transition: what the gateway does while down.
  bool local_when_down = false;
  // How often a waiter asks again without a release published (FleetConfig::redis_poll).
  std::chrono::milliseconds poll{500};
};

// The channel a released slot or seat is published on, with its key's name.
inline constexpr std::string_view released_channel = "switchyard:released";

// limit ÷ gateways for `redis_down: local`, rounded down but at least 1:
// never the whole limit when more than one gateway shares it.
tenancy::KeyLimits split_limits(const tenancy::KeyLimits& limits, int gateways);
// Whether a key's limits need Redis at all (models, priority and weight do not).
bool needs_shared_state(const tenancy::KeyLimits& limits);

class SharedLimits final : public Limiter {
 public:
  SharedLimits(boost::asio::any_io_executor executor, SharedLimitsOptions options);
  ~SharedLimits();

  void start();
  void stop();
  bool up() const { return client_.up(); }
  RedisClient& client() { return client_; }
  // Up and down transitions, after they are logged.
  void on_state(std::function<void(bool up)> fn) { on_state_ = std::move(fn); }
  // Messages on `channel` (from start() on, on a connection of their own);
  // call before start(). Messages sent while Redis was unreachable are lost.
  void listen(std::string channel, std::function<void(const std::string& message)> fn) {
    listeners_.emplace(std::move(channel), std::move(fn));
  }
  // A slot or seat of `key` released on any gateway (call before start()).
  void on_released(std::function<void(const std::string& key)> fn) { on_released_ = std::move(fn); }
  std::chrono::milliseconds poll() const { return options_.poll; }
  // Gateways seen by the last heartbeat (this one included); 1 before any.
  int gateways() const { return gateways_; }
  // "redis at 127.0.0.1:6379 unreachable: Connection refused".
  std::string down_message(const std::string& why) const;

  // Limiter. A lease names the request in Redis; its slot is renewed until
  // close(). correct, refund and close write in the background. A key with
  // no rate limits (or no max_concurrency / max_sessions) takes its rates
  // (its slot) without asking Redis.
  std::uint64_t open(const std::string& key, const tenancy::KeyLimits& limits,
                     const std::string& session) override;
  boost::asio::awaitable<Result<RatesTaken>> take_rates(std::uint64_t lease,
                                                        std::int64_t cost) override;
  boost::asio::awaitable<Result<SlotTaken>> acquire(std::uint64_t lease) override;
  void correct(std::uint64_t lease, std::int64_t used) override;
  void refund(std::uint64_t lease) override;
  void close(std::uint64_t lease) override;

 private:
  struct Lease {
    std::string key;
    tenancy::KeyLimits limits;
    std::string session;
    std::string member;
    std::int64_t reserved = 0;  // tokens taken by take_rates
    bool took_request = false;
    bool holds_slot = false;
  };
  boost::asio::awaitable<Result<RedisReply>> eval(const redis_scripts::Script& script,
                                                  std::vector<std::string> keys,
                                                  std::vector<std::string> args);
  void spawn_eval(const redis_scripts::Script& script, std::vector<std::string> keys,
                  std::vector<std::string> args);
  boost::asio::awaitable<void> keep_alive();
  std::vector<std::string> rate_keys(const Lease& lease) const;
  void release(const Lease& lease);

  // Constant after construction.
  boost::asio::any_io_executor executor_;
  const SharedLimitsOptions options_;
  // The I/O thread's.
  RedisClient client_;
  RedisClient subscriber_;  // for listen(), started only with listeners
  std::map<std::string, std::function<void(const std::string&)>> listeners_;
  boost::asio::steady_timer tick_;
  std::map<std::string_view, std::string> shas_;  // script name → SHA1 once loaded
  std::map<std::uint64_t, Lease> leases_;
  std::uint64_t next_lease_ = 1;
  int gateways_ = 1;
  bool stopped_ = false;
  std::function<void(bool)> on_state_;
  std::function<void(const std::string&)> on_released_;
  std::shared_ptr<char> alive_ = std::make_shared<char>();
};

}  // namespace switchyard::tenancy
