#include "tenancy/key_watcher.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace switchyard::tenancy {

Result<StoredKeys> load_stored_keys(const std::string& path) {
  auto store = KeyStore::open(path);
  if (!store) return store.error();
  auto version = store->version();
  if (!version) return Error{fmt::format("{}: {}", path, version.error().message)};
  auto keys = store->list();
  if (!keys) return Error{fmt::format("{}: {}", path, keys.error().message)};
  return StoredKeys{std::move(*keys), *version};
}

KeyWatcher::KeyWatcher(std::string path, std::int64_t since, std::chrono::milliseconds interval,
                       std::function<void(StoredKeys)> on_change)
    : path_(std::move(path)),
      interval_(interval),
      on_change_(std::move(on_change)),
      thread_([this, since] { run(since); }) {}

KeyWatcher::~KeyWatcher() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void KeyWatcher::run(std::int64_t since) {
  std::optional<KeyStore> store;
  bool failing = false;
  const auto report = [&](const std::string& why) {
    if (!failing)
      spdlog::error("keys: cannot read {}: {}; the keys last read stay in force, retrying", path_,
                    why);
    failing = true;
    store.reset();  // reopened on the next poll
  };
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stop_; })) {
    lock.unlock();
    if (!store) {
      if (auto opened = KeyStore::open(path_))
        store.emplace(std::move(*opened));
      else
        report(opened.error().message);
    }
    if (store) {
      auto version = store->version();
      if (!version) {
        report(version.error().message);
      } else if (*version != since) {
        if (auto keys = store->list()) {
          since = *version;
          failing = false;
          on_change_(StoredKeys{std::move(*keys), since});
        } else {
          report(keys.error().message);
        }
      } else {
        failing = false;
      }
    }
    lock.lock();
  }
}

}  // namespace switchyard::tenancy
