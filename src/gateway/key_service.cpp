#include "gateway/key_service.h"

#include <boost/asio/post.hpp>

#include <chrono>
#include <random>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "tenancy/key_records.h"

namespace switchyard::gateway {

namespace net = boost::asio;

KeyService::KeyService(net::any_io_executor executor, const config::FleetConfig& config,
                       tenancy::StoredKeys stored, obs::GatewayMetrics& metrics)
    : executor_(executor),
      metrics_(metrics),
      state_db_(config.state_db),
      redis_secret_(config.redis_secret),
      redis_required_(config.redis_down == config::FleetConfig::RedisDown::reject),
      stored_version_(stored.version),
      registry_(config.static_keys, std::move(stored.keys)),
      keys_(registry_.table()) {
  if (config.redis) share(config);
}

KeyService::~KeyService() {
  stop();
}

void KeyService::stop() {
  hooks_ = {};
  if (shared_keys_) shared_keys_->stop();
  if (shared_limits_) shared_limits_->stop();
}

// redis: the keys' limits shared with the other gateways on it.
void KeyService::share(const config::FleetConfig& c) {
  tenancy::SharedLimitsOptions o;
  o.redis.host = c.redis->host;
  o.redis.port = c.redis->port;
  o.redis.db = c.redis->db;
  o.lease_ttl = c.redis_lease_ttl;
  o.gateway_id = fmt::format("{:016x}", std::mt19937_64(std::random_device{}())());
  o.local_when_down = c.redis_down == config::FleetConfig::RedisDown::local;
  o.poll = c.redis_poll;
  shared_limits_ = std::make_shared<tenancy::SharedLimits>(executor_, std::move(o));
  if (c.redis_secret.empty())
    spdlog::warn(
        "keys: no redis_secret: whoever can write to redis at {}:{} can add API keys to every "
        "gateway on it (docs/keys.md)",
        c.redis->host, c.redis->port);
}

void KeyService::start(Hooks hooks) {
  hooks_ = std::move(hooks);
  if (shared_limits_) {
    tenancy::SharedLimits& shared = *shared_limits_;
    metrics_.set_redis_state(false, shared.gateways());
    shared.on_state([this, &shared](bool up) {
      metrics_.set_redis_state(up, shared.gateways());
      // Connected: the key records at once, not at the next check.
      if (up && shared_keys_) shared_keys_->changed();
    });
    shared.client().on_command([this, &shared](bool ok, double seconds) {
      metrics_.redis_command(ok, seconds);
      metrics_.set_redis_state(shared.up(), shared.gateways());
    });
    // The key records too: those held published, Redis's followed.
    if (registry_.await_shared()) registry_changed();
    shared_keys_ = std::make_unique<tenancy::SharedKeys>(executor_, shared.client(), redis_secret_);
    shared_keys_->set_local(registry_.records());
    shared_keys_->on_records([this](const std::vector<tenancy::KeyRecord>& records) {
      if (registry_.add_shared(records)) registry_changed();
    });
    shared.on_released([this](const std::string& key) {
      if (hooks_.released) hooks_.released(key);
    });
    shared.listen(std::string(tenancy::key_records::channel),
                  [this](const std::string&) { shared_keys_->changed(); });
    shared.start();
    shared_keys_->start();
  }
  watcher_ = std::make_unique<tenancy::KeyWatcher>(
      state_db_, stored_version_, std::chrono::milliseconds(200), std::chrono::seconds(1),
      [this, alive = std::weak_ptr<char>(alive_)](tenancy::StoredKeys next) {
        net::post(executor_, [this, alive, next = std::move(next)]() mutable {
          if (alive.lock()) apply_stored(std::move(next.keys));
        });
      });
}

obs::RedisStatus KeyService::redis_status() const {
  obs::RedisStatus s;
  if (!shared_limits_) return s;
  const auto& client = shared_limits_->client();
  s.state = client.up() ? "up" : "down";
  s.since =
      std::chrono::duration_cast<std::chrono::seconds>(client.since().time_since_epoch()).count();
  s.last_error = client.last_error();
  s.required = redis_required_;
  return s;
}

void KeyService::set_statics(std::vector<tenancy::StaticKey> statics) {
  if (registry_.set_statics(std::move(statics))) publish(ApiKeys(registry_.table()));
}

void KeyService::apply_stored(std::vector<tenancy::KeyRecord> next) {
  spdlog::info("keys: {} stored key(s) loaded from {}", next.size(), state_db_);
  if (registry_.set_stored(std::move(next))) registry_changed();
}

void KeyService::registry_changed() {
  publish(ApiKeys(registry_.table()));
  if (shared_keys_) shared_keys_->set_local(registry_.records());
}

// Limits apply at once; requests of a key that is gone or revoked are
// refused, queued ones included.
void KeyService::publish(ApiKeys next) {
  std::vector<std::string> gone;
  for (const auto& e : keys_.entries())
    if (!e.revoked && !next.by_name(e.name)) gone.push_back(e.name);
  keys_ = std::move(next);
  for (const auto& name : gone)
    spdlog::info("keys: '{}' revoked or removed; its waiting requests are refused", name);
  if (hooks_.changed) hooks_.changed(gone);
}

}  // namespace switchyard::gateway
