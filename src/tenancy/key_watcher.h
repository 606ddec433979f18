// Keeps the running gateway's view of the stored keys current: a thread of
// its own polls the state database's key version (a single-row read) and
// hands each changed key list on. The I/O thread never touches SQLite.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "tenancy/key_store.h"

namespace switchyard::tenancy {

struct StoredKeys {
  std::vector<KeyRecord> keys;
  std::int64_t version = 0;
};

// The keys and their version now (start-up; blocks on SQLite).
Result<StoredKeys> load_stored_keys(const std::string& path);

class KeyWatcher {
 public:
  // Polls every `interval` from `since` on; `on_change` runs on the
  // watcher's thread (post it to where the keys are used). A failed poll is
  // logged once and retried.
  KeyWatcher(std::string path, std::int64_t since, std::chrono::milliseconds interval,
             std::function<void(StoredKeys)> on_change);
  ~KeyWatcher();  // stops and joins the thread
  KeyWatcher(const KeyWatcher&) = delete;
  KeyWatcher& operator=(const KeyWatcher&) = delete;

 private:
  void run(std::int64_t since);

  // Constant after construction.
  const std::string path_;
  const std::chrono::milliseconds interval_;
  const std::function<void(StoredKeys)> on_change_;
  // Guarded by mutex_.
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;

  std::thread thread_;  // last: starts once the rest is set
};

}  // namespace switchyard::tenancy
