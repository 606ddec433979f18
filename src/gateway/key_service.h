// The API keys in force, kept current: fleet.yaml's keys, the state
// database's (watched by tenancy::KeyWatcher) and, with `redis:`, the
// records the other gateways shared there (tenancy::SharedKeys), assembled
// by tenancy::KeyRegistry into the table the stages read; with `redis:` also
// the keys' limits shared with those gateways (tenancy::SharedLimits).
// Single-threaded: the I/O thread (the watcher's thread only posts to it).
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/fleet_config.h"
#include "gateway/api_keys.h"
#include "obs/gateway_metrics.h"
#include "obs/status.h"
#include "tenancy/key_registry.h"
#include "tenancy/key_watcher.h"
#include "tenancy/shared_keys.h"
#include "tenancy/shared_limits.h"

namespace switchyard::gateway {

class KeyService {
 public:
  // Whom a change concerns; set before start().
  struct Hooks {
    // A new table is in force; `gone`: keys revoked or removed since the
    // last one (their waiting requests are to be refused).
    std::function<void(const std::vector<std::string>& gone)> changed;
    // A slot or seat of `key` freed in Redis (by any gateway).
    std::function<void(const std::string& key)> released;
  };

  // With `config.redis`, the shared limits are made here and started by
  // start(). `metrics` must outlive the service.
  KeyService(boost::asio::any_io_executor executor, const config::FleetConfig& config,
             tenancy::StoredKeys stored, obs::GatewayMetrics& metrics);
  ~KeyService();  // stop(), and the watcher joined
  KeyService(const KeyService&) = delete;
  KeyService& operator=(const KeyService&) = delete;

  // Redis connected and followed, the state database watched; changes from
  // now on reach `hooks`.
  void start(Hooks hooks);
  // Redis let go, and no hook called from now on (shutdown: what they reach
  // may be gone).
  void stop();

  // The table in force: the same object for the service's life, reassigned
  // on every change.
  const ApiKeys& table() const { return keys_; }
  // The stored records held (SQLite's and Redis's), for GET /admin/keys.
  const std::vector<tenancy::KeyRecord>& records() const { return registry_.records(); }
  // Null without `redis:`.
  const std::shared_ptr<tenancy::SharedLimits>& shared_limits() const { return shared_limits_; }
  // Redis's state for the status snapshot ("unconfigured" without it).
  obs::RedisStatus redis_status() const;

  // A reload's api_keys.
  void set_statics(std::vector<tenancy::StaticKey> statics);

 private:
  void share(const config::FleetConfig& config);
  void apply_stored(std::vector<tenancy::KeyRecord> next);
  // The registry published a new table: in force now, and what this gateway
  // holds offered to Redis.
  void registry_changed();
  void publish(ApiKeys next);

  boost::asio::any_io_executor executor_;
  obs::GatewayMetrics& metrics_;
  const std::string state_db_;
  const std::string redis_secret_;
  const bool redis_required_;
  const std::int64_t stored_version_;
  tenancy::KeyRegistry registry_;
  ApiKeys keys_;
  Hooks hooks_;
  std::shared_ptr<tenancy::SharedLimits> shared_limits_;  // null without redis:
  std::unique_ptr<tenancy::SharedKeys> shared_keys_;      // the key records shared there
  // Changes posted by the watcher's thread that run after the service is
  // gone find `alive_` expired.
  std::shared_ptr<char> alive_ = std::make_shared<char>();
  std::unique_ptr<tenancy::KeyWatcher> watcher_;  // last: joined first
};

}  // namespace switchyard::gateway
