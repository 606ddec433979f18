#include "tenancy/key_watcher.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <filesystem>
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

namespace {

// A write wakes the watcher as it begins; a commit's writes (its journal's
// frames, then its index in shared memory, which inotify does not see) end
// well within this, and the read after it finds the commit done.
constexpr std::chrono::milliseconds kSettle{10};

// The files a commit to the database at `path` writes: the journal in WAL
// mode, the file itself at a checkpoint or in rollback mode.
std::vector<std::string> database_files(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  return {name, name + "-wal", name + "-journal"};
}

std::filesystem::path directory_of(const std::filesystem::path& path) {
  return path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
}

}  // namespace

KeyWatcher::KeyWatcher(std::string path, std::int64_t since, std::chrono::milliseconds interval,
                       std::chrono::milliseconds backstop,
                       std::function<void(StoredKeys)> on_change)
    : path_(std::move(path)),
      interval_(interval),
      backstop_(backstop),
      on_change_(std::move(on_change)),
      events_(directory_of(path_), database_files(path_)),
      thread_([this, since] { run(since); }) {}

KeyWatcher::~KeyWatcher() {
  events_.stop();
  thread_.join();
}

KeyFile::FileStamp KeyFile::stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  const auto ns = [](const timespec& t) {
    return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  };
  // The kernel stamps a write with this clock: a later write's times are
  // past it.
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
  const bool settled = std::max(ns(st.st_mtim), ns(st.st_ctim)) < ns(now);
  return {st.st_dev, st.st_ino, st.st_size, ns(st.st_mtim), ns(st.st_ctim), settled};
}

Result<std::optional<StoredKeys>> KeyFile::read_if_changed(std::int64_t since) {
  if (const FileStamp now = stamp(path_); !store_ || !opened_.settled || now != opened_) {
    store_.reset();
    auto store = KeyStore::open_existing(path_);
    if (!store) return store.error();
    store_.emplace(std::move(*store));
    opened_ = now;
  }
  auto version = store_->version();
  if (!version) return failed(version.error());
  if (*version == since) return std::optional<StoredKeys>();
  auto keys = store_->list();
  if (!keys) return failed(keys.error());
  return std::optional<StoredKeys>(StoredKeys{std::move(*keys), *version});
}

Error KeyFile::failed(const Error& e) {
  store_.reset();
  return Error{fmt::format("{}: {}", path_, e.message)};
}

bool KeyWatcher::wait_idle(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return idle_changed_.wait_for(lock, timeout, [this] { return idle_; });
}

FileEvents::Woken KeyWatcher::wait_for_write() {
  const auto set_idle = [this](bool idle) {
    {
      std::lock_guard lock(mutex_);
      idle_ = idle;
    }
    idle_changed_.notify_all();
  };
  set_idle(true);  // a write from here on is in the queue the wait reads first
  const auto woken = events_.wait(backstop_, kSettle);
  set_idle(false);
  return woken;
}

void KeyWatcher::run(std::int64_t since) {
  KeyFile file(path_);
  bool failing = false;
  // Under a stream of writes (the ledger commits every 100 ms under load)
  // this is a read an interval; on a quiet database, one a backstop. The
  // first, at once: what changed since the keys were loaded.
  bool written = false;
  for (;;) {
    auto read = file.read_if_changed(since);
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
    const auto woken = written || !events_.watching() ? events_.pause(interval_) : wait_for_write();
    if (woken == FileEvents::Woken::stopped) return;
    written = woken == FileEvents::Woken::written;
  }
}

}  // namespace switchyard::tenancy
