// Keeps the running gateway's view of the stored keys current: a thread of
// its own reads the state database's key version (a single-row read) when
// the database's files are written, and hands each changed key list on. The
// I/O thread never touches SQLite.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/file_events.h"
#include "common/result.h"
#include "tenancy/key_store.h"

namespace switchyard::tenancy {

struct StoredKeys {
  std::vector<KeyRecord> keys;
  std::int64_t version = 0;
};

// The keys and their version now (start-up; blocks on SQLite).
Result<StoredKeys> load_stored_keys(const std::string& path);

// The state database as the watcher reads it. A connection kept open reads
// committed changes (SQLite checks the WAL at every read) but answers from
// its page cache, so it would not see the file damaged or removed under it:
// it is kept only while the database file is as it was when opened (any
// write changes its modification and status-change times, a replacement
// its inode) and was last written before the clock's last tick (a write in
// the same tick could leave the times as they were). The WAL, which every
// write changes, is not watched; only checkpoints write the file. A fresh
// connection each poll read the schema again: some 300k instructions a
// poll (docs/performance.md, "A streamed chunk").
class KeyFile {
 public:
  explicit KeyFile(std::string path) : path_(std::move(path)) {}
  // The keys when their version is not `since`, nothing when it is.
  Result<std::optional<StoredKeys>> read_if_changed(std::int64_t since);

 private:
  struct FileStamp {  // size -1: the file cannot be stat'ed
    std::uint64_t device = 0, inode = 0;
    std::int64_t size = -1;
    std::int64_t modified_ns = 0, changed_ns = 0;
    bool settled = false;  // its times are before the coarse clock's now
    bool operator==(const FileStamp&) const = default;
  };
  static FileStamp stamp(const std::string& path);
  // The next read opens the file afresh.
  Error failed(const Error& e);

  const std::string path_;
  FileStamp opened_;
  std::optional<KeyStore> store_;
};

class KeyWatcher {
 public:
  // Reads the keys from `since` on: at once, then when the database or its
  // journal is written (10 ms after the write began), at most once an
  // `interval` (and once more an interval after a write, should its commit
  // have taken longer), and every `backstop` whatever inotify reports;
  // without inotify, every `interval`. `on_change` runs on the watcher's
  // thread (post it to where the keys are used). A failed read is logged
  // once and retried.
  KeyWatcher(std::string path, std::int64_t since, std::chrono::milliseconds interval,
             std::chrono::milliseconds backstop, std::function<void(StoredKeys)> on_change);
  ~KeyWatcher();  // stops and joins the thread
  KeyWatcher(const KeyWatcher&) = delete;
  KeyWatcher& operator=(const KeyWatcher&) = delete;

  // Until it waits for the next write (tests: a write from then on is what
  // wakes it); false after `timeout`.
  bool wait_idle(std::chrono::milliseconds timeout);

 private:
  void run(std::int64_t since);
  // events_.wait() for a write or the backstop, seen by wait_idle().
  FileEvents::Woken wait_for_write();

  // Constant after construction.
  const std::string path_;
  const std::chrono::milliseconds interval_, backstop_;
  const std::function<void(StoredKeys)> on_change_;
  FileEvents events_;  // the database's files; stop() ends the thread
  std::mutex mutex_;
  std::condition_variable idle_changed_;
  bool idle_ = false;  // guarded by mutex_: in its wait for a write

  std::thread thread_;  // last: starts once the rest is set
};

}  // namespace switchyard::tenancy
