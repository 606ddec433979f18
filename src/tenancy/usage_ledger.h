// The usage ledger: a row per request in the state database, written by a
// thread of its own in batches (one transaction per batch). submit() only
// appends to a bounded buffer under a lock held for a push, so the I/O
// thread never waits on SQLite; a full buffer drops the row, counted and
// logged.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace switchyard::tenancy {

struct UsageRow {
  std::int64_t time_ms = 0;  // Unix milliseconds at the request's arrival
  std::string request_id;
  std::string key;  // the key's name; empty without keys
  std::string model;
  std::string instance;  // empty when none was chosen
  std::string endpoint;  // the route's path
  std::string outcome;   // ok, error, upstream_failed, client_closed
  int status = 0;
  std::int64_t prompt_tokens = 0;
  std::int64_t cached_tokens = 0;
  std::int64_t completion_tokens = 0;
  std::optional<std::int64_t> max_tokens;  // as asked, for a replayable trace
  double ttft_ms = -1;                     // < 0: no first byte
  double duration_ms = 0;
  std::string session;
};

class UsageLedger {
 public:
  // `path`: the state database (its schema created by open_state_db).
  // `capacity`: rows buffered at most between two batches.
  explicit UsageLedger(std::string path, std::size_t capacity = 16384);
  ~UsageLedger();  // writes what is buffered, then joins
  UsageLedger(const UsageLedger&) = delete;
  UsageLedger& operator=(const UsageLedger&) = delete;

  // Thread-safe and never waits on I/O. False when the buffer is full (the
  // row is dropped and counted).
  bool submit(UsageRow row);
  // Blocks until every row submitted so far is written (tests, shutdown).
  void flush();
  std::uint64_t dropped() const;

 private:
  void run();

  // Constant after construction.
  const std::string path_;
  const std::size_t capacity_;
  // Guarded by mutex_.
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable written_;
  std::vector<UsageRow> pending_;
  std::uint64_t submitted_ = 0, done_ = 0, dropped_ = 0;
  bool stop_ = false;
  bool flush_wanted_ = false;  // flush(): write now, not at the next interval

  std::thread thread_;  // last: starts once the rest is set
};

}  // namespace switchyard::tenancy
