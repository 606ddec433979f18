// The usage ledger: a row per request in the state database, written by a
// thread of its own in batches (one transaction per batch). submit() only
// appends to a bounded buffer under a lock held for a push, so the I/O
// thread never waits on SQLite; a full buffer drops the row, counted and
// logged.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace switchyard::tenancy {

// A row of the ledger, its texts held as `Text`: owned strings as read
// back (UsageRow), views into a request's own strings when submitted
// (UsageRowView), and spans of the ledger's buffer while it waits there.
template <class Text>
struct BasicUsageRow {
  std::int64_t time_ms = 0;  // Unix milliseconds at the request's arrival
  Text request_id{};
  Text key{};  // the key's name; empty without keys
  Text model{};
  Text instance{};  // empty when none was chosen
  Text endpoint{};  // the route's path
  Text outcome{};   // ok, error, upstream_failed, client_closed
  int status = 0;
  std::int64_t prompt_tokens = 0;
  std::int64_t cached_tokens = 0;
  std::int64_t completion_tokens = 0;
  std::optional<std::int64_t> max_tokens;  // as asked, for a replayable trace
  double ttft_ms = -1;                     // < 0: no first byte
  double duration_ms = 0;
  Text session{};

  // The same row with each text mapped by `f`.
  template <class To, class F>
  BasicUsageRow<To> with_texts(F f) const {
    BasicUsageRow<To> o;
    o.time_ms = time_ms;
    o.request_id = f(request_id);
    o.key = f(key);
    o.model = f(model);
    o.instance = f(instance);
    o.endpoint = f(endpoint);
    o.outcome = f(outcome);
    o.status = status;
    o.prompt_tokens = prompt_tokens;
    o.cached_tokens = cached_tokens;
    o.completion_tokens = completion_tokens;
    o.max_tokens = max_tokens;
    o.ttft_ms = ttft_ms;
    o.duration_ms = duration_ms;
    o.session = f(session);
    return o;
  }
};

using UsageRow = BasicUsageRow<std::string>;
using UsageRowView = BasicUsageRow<std::string_view>;

inline UsageRowView view_of(const UsageRow& row) {
  return row.with_texts<std::string_view>([](const std::string& s) { return std::string_view(s); });
}

class UsageLedger {
 public:
  // Where a pending row's text is in the ledger's buffer.
  struct TextSpan {
    std::uint32_t at = 0, size = 0;
  };

  // `path`: the state database (its schema created by open_state_db).
  // `capacity`: rows buffered at most between two batches.
  explicit UsageLedger(std::string path, std::size_t capacity = 16384);
  ~UsageLedger();  // writes what is buffered, then joins
  UsageLedger(const UsageLedger&) = delete;
  UsageLedger& operator=(const UsageLedger&) = delete;

  // Thread-safe and never waits on I/O: the row's texts are copied into one
  // buffer, so a row costs no allocation of its own (seven strings a row,
  // allocated on the I/O thread and freed on the writer's, contended for
  // glibc's arena lock). False when the buffer is full (the row is dropped
  // and counted).
  bool submit(const UsageRowView& row);
  // Blocks until every row submitted so far is written (tests, shutdown).
  void flush();
  // The same without asking for a write: the rows go at the writer's own
  // time. False if they are not written within `timeout` (tests).
  bool wait_written(std::chrono::milliseconds timeout);
  std::uint64_t dropped() const;
  // The bytes its row buffers hold: a burst's while it waits and is
  // written, at most a steady interval's after.
  std::size_t buffered_bytes() const;

 private:
  void run();

  // Constant after construction.
  const std::string path_;
  const std::size_t capacity_;
  // Guarded by mutex_.
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable written_;
  std::vector<BasicUsageRow<TextSpan>> pending_;
  std::string pending_text_;  // the pending rows' texts
  std::uint64_t submitted_ = 0, done_ = 0, dropped_ = 0;
  bool stop_ = false;
  bool flush_wanted_ = false;     // flush(): write now, not at the next interval
  bool writer_idle_ = false;      // the writer sleeps until a row comes
  std::size_t writer_bytes_ = 0;  // what the writer's buffers hold after its last batch

  std::thread thread_;  // last: starts once the rest is set
};

}  // namespace switchyard::tenancy
