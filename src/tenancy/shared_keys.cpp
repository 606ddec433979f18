#include "tenancy/shared_keys.h"

#include <boost/asio.hpp>

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "tenancy/key_records.h"

namespace switchyard::tenancy {

namespace net = boost::asio;
using net::awaitable;

SharedKeys::SharedKeys(net::any_io_executor executor, RedisClient& redis, std::string secret,
                       std::chrono::milliseconds check_interval)
    : executor_(executor),
      redis_(redis),
      secret_(std::move(secret)),
      check_interval_(check_interval),
      wake_(executor) {}

SharedKeys::~SharedKeys() {
  stop();
}

void SharedKeys::start() {
  if (started_) return;
  started_ = true;
  net::co_spawn(executor_, run(), net::detached);
}

void SharedKeys::stop() {
  if (stopped_) return;
  stopped_ = true;
  alive_.reset();
  wake_.cancel();
}

void SharedKeys::changed() {
  check_pending_ = true;
  if (waiting_) wake_.cancel();
}

void SharedKeys::set_local(std::vector<KeyRecord> local) {
  local_ = std::move(local);
  publish_pending_ = true;
  if (waiting_) wake_.cancel();
}

awaitable<void> SharedKeys::run() {
  const std::weak_ptr<char> alive = alive_;
  while (alive.lock() && !stopped_) {
    bool answered = false;
    if (redis_.up()) {
      check_pending_ = false;
      answered = co_await check();
      if (!alive.lock() || stopped_) co_return;
      // Only when something changed: a record Redis refuses (it holds a
      // higher version) is not offered again and again.
      if (answered && (publish_pending_ || remote_changed_)) {
        publish_pending_ = remote_changed_ = false;
        answered = co_await publish();
        if (!alive.lock() || stopped_) co_return;
        publish_pending_ = !answered;
      }
      if (answered) down_logged_ = false;
    }
    if (!redis_.up() && seen_version_ && !down_logged_) {
      down_logged_ = true;
      spdlog::warn(
          "keys: redis at {} unreachable: the {} key record(s) last read from it stay in force "
          "until it is back",
          redis_.address(), remote_count_);
    }
    // A change came while this checked: again at once (not after a failure,
    // which would only fail again until the connection is back).
    if (answered && check_pending_) continue;
    wake_.expires_after(check_interval_);
    waiting_ = true;
    co_await wake_.async_wait(net::as_tuple(net::use_awaitable));
    if (!alive.lock()) co_return;
    waiting_ = false;
  }
}

awaitable<bool> SharedKeys::publish() {
  const std::weak_ptr<char> alive = alive_;
  std::vector<KeyRecord> lacking;  // set_local() may replace local_ meanwhile
  for (const auto& record : local_) {
    const auto it = remote_versions_.find(record.name);
    if (it == remote_versions_.end() || it->second < record.version) lacking.push_back(record);
  }
  int published = 0;
  for (const auto& record : lacking) {
    auto put = put_record_command(record, secret_);  // GCC 12: await named locals only
    auto reply = co_await redis_.command(std::move(put));
    if (!alive.lock()) co_return false;
    if (!reply) co_return false;
    if (reply->is_error()) {
      spdlog::warn("keys: cannot publish '{}' to redis: {}", record.name, reply->str);
      continue;
    }
    if (reply->integer == 1) ++published;
  }
  if (published > 0)
    spdlog::info(
        "keys: {} key record(s) this gateway holds published to redis (it lacked them "
        "or held older versions)",
        published);
  co_return true;
}

std::vector<KeyRecord> SharedKeys::decode_all(const RedisReply& all) {
  std::vector<KeyRecord> records;
  for (std::size_t i = 0; i + 1 < all.elements.size(); i += 2) {
    const auto& name = all.elements[i].str;
    auto record = decode_record(name, all.elements[i + 1].str, secret_);
    if (!record) {
      spdlog::warn("keys: the record of '{}' in redis is refused ({}); ignored", name,
                   record.error().message);
      continue;
    }
    records.push_back(std::move(*record));
  }
  std::sort(records.begin(), records.end(),
            [](const KeyRecord& a, const KeyRecord& b) { return a.name < b.name; });
  return records;
}

awaitable<bool> SharedKeys::check() {
  const std::weak_ptr<char> alive = alive_;
  std::vector<std::string> get{"GET", std::string(key_records::version)};
  auto version = co_await redis_.command(std::move(get));
  if (!alive.lock() || !version) co_return false;
  const std::int64_t now = version->type == RedisReply::Type::string
                               ? std::strtoll(version->str.c_str(), nullptr, 10)
                               : 0;
  if (seen_version_ && *seen_version_ == now) co_return true;
  std::vector<std::string> hgetall{"HGETALL", std::string(key_records::records)};
  auto all = co_await redis_.command(std::move(hgetall));
  if (!alive.lock() || !all) co_return false;
  if (all->type != RedisReply::Type::array) co_return true;
  const auto records = decode_all(*all);
  if (!seen_version_ || remote_count_ != records.size())
    spdlog::info("keys: {} key record(s) read from redis at {}", records.size(), redis_.address());
  seen_version_ = now;
  remote_count_ = records.size();
  remote_versions_.clear();
  for (const auto& r : records) remote_versions_[r.name] = r.version;
  remote_changed_ = true;
  if (on_records_) on_records_(records);
  co_return true;
}

}  // namespace switchyard::tenancy
