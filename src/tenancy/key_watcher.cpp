#include "tenancy/key_watcher.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <optional>

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

namespace {

// The keys when their version is not `since`, nothing when it is. A fresh
// connection each time: one kept open answers from its page cache and would
// not see the file damaged or removed under it.
Result<std::optional<StoredKeys>> read_if_changed(const std::string& path, std::int64_t since) {
  auto store = KeyStore::open_existing(path);
  if (!store) return store.error();
  auto version = store->version();
  if (!version) return Error{fmt::format("{}: {}", path, version.error().message)};
  if (*version == since) return std::optional<StoredKeys>();
  auto keys = store->list();
  if (!keys) return Error{fmt::format("{}: {}", path, keys.error().message)};
  return std::optional<StoredKeys>(StoredKeys{std::move(*keys), *version});
}

}  // namespace

void KeyWatcher::run(std::int64_t since) {
  bool failing = false;
  std::unique_lock lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stop_; })) {
    lock.unlock();
    auto read = read_if_changed(path_, since);
    if (!read) {
      if (!failing)
        spdlog::error("keys: cannot read {}; the keys last read stay in force, retrying",
                      read.error().message);
      failing = true;
    } else {
      if (failing) spdlog::info("keys: {} read again", path_);
      failing = false;
      if (*read) {
        since = (*read)->version;
        on_change_(std::move(**read));
      }
    }
    lock.lock();
  }
}

}  // namespace switchyard::tenancy
