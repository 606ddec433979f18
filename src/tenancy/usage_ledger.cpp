#include "tenancy/usage_ledger.h"

#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <map>

#include <spdlog/spdlog.h>

#include "tenancy/key_store.h"
#include "tenancy/usage_batches.h"

namespace switchyard::tenancy {

namespace {

// Batches are written at most this often, so a burst is one transaction.
constexpr auto batch_interval = std::chrono::milliseconds(100);

using PendingRow = BasicUsageRow<UsageLedger::TextSpan>;

// Rows one INSERT carries: a statement's own cost (starting the program,
// its statement journal, the reset) is then shared by 16 rows, some 30 % of
// a row's instructions (docs/performance.md).
constexpr std::size_t kRowsPerInsert = 16;
constexpr int kColumns = 15;

// A burst grows the row buffers to its size, and kept, that capacity stayed
// resident after it: 1-2 MiB after 9,500 streams closed at once
// (docs/reliability.md). A batch's buffer larger than these is given back
// once the batch is written, within some 150 ms of its last row and so
// before the server's heap trim (250 ms after the burst's last close).
// Keeping a buffer that steady traffic fills instead (given back only when
// the batches shrink) gave it back an interval or two later, often after the
// trim. The cost: over 10,000 requests a second (batches over 1,024 rows)
// the I/O thread grows its buffer anew each interval, some 0.7 MB copied an
// interval at 34,000 (estimated; too little for the bench to see).
constexpr std::size_t kKeptRows = 1024;
constexpr std::size_t kKeptTextBytes = 64 * 1024;

template <class Buffer>
void give_back_large(Buffer& buffer, std::size_t kept) {
  if (buffer.capacity() > kept) Buffer().swap(buffer);
}

std::string insert_sql(std::size_t rows) {
  std::string sql =
      "INSERT INTO usage (time_ms, request_id, key, model, instance, endpoint, outcome, status, "
      "prompt_tokens, cached_tokens, completion_tokens, max_tokens, ttft_ms, duration_ms, "
      "session) VALUES ";
  for (std::size_t r = 0; r < rows; ++r) {
    sql += r ? ",(" : "(";
    for (int c = 0; c < kColumns; ++c) sql += c ? ",?" : "?";
    sql += ')';
  }
  return sql;
}

// The ledger's prepared statements: an INSERT of kRowsPerInsert rows, one of
// a single row for the rest of a batch, the keys' last use and the batches'
// ranges.
struct LedgerStatements {
  Statement insert_group, insert_one, touch;
  UsageBatches batches;
};

Result<LedgerStatements> prepare_statements(Database& db) {
  auto group = db.prepare(insert_sql(kRowsPerInsert));
  if (!group) return group.error();
  auto one = db.prepare(insert_sql(1));
  if (!one) return one.error();
  auto touch =
      db.prepare("UPDATE keys SET last_used = max(coalesce(last_used, 0), ?2) WHERE name = ?1");
  if (!touch) return touch.error();
  auto batches = UsageBatches::prepare(db);
  if (!batches) return batches.error();
  return LedgerStatements{std::move(*group), std::move(*one), std::move(*touch),
                          std::move(*batches)};
}

// Binds `r` as the row whose first column is parameter `first` (1-based).
// The texts stay in the batch's buffer until the statement has run.
void bind_row(Statement& insert, int first, const UsageRowView& r) {
  insert.bind(first, r.time_ms)
      .bind_view(first + 1, r.request_id)
      .bind_view(first + 2, r.key)
      .bind_view(first + 3, r.model)
      .bind_view(first + 4, r.instance)
      .bind_view(first + 5, r.endpoint)
      .bind_view(first + 6, r.outcome)
      .bind(first + 7, std::int64_t{r.status})
      .bind(first + 8, r.prompt_tokens)
      .bind(first + 9, r.cached_tokens)
      .bind(first + 10, r.completion_tokens)
      .bind(first + 11, r.max_tokens)
      .bind(first + 13, r.duration_ms)
      .bind_view(first + 14, r.session);
  r.ttft_ms >= 0 ? insert.bind(first + 12, r.ttft_ms) : insert.bind_null(first + 12);
}

// A batch's rows, their range and the keys' last use, in the caller's
// transaction.
Result<Done> write_rows(Database& db, LedgerStatements& statements,
                        const std::vector<PendingRow>& pending, std::string_view text) {
  const auto after = statements.batches.cover();
  if (!after) return after.error();
  std::map<std::string, std::int64_t, std::less<>> last_used;  // seconds, by key
  const auto view = [text](UsageLedger::TextSpan span) { return text.substr(span.at, span.size); };
  std::int64_t latest_ms = 0;
  for (std::size_t i = 0; i < pending.size();) {
    const std::size_t rows = pending.size() - i >= kRowsPerInsert ? kRowsPerInsert : 1;
    Statement& insert = rows > 1 ? statements.insert_group : statements.insert_one;
    for (std::size_t k = 0; k < rows; ++k)
      bind_row(insert, static_cast<int>(k) * kColumns + 1,
               pending[i + k].with_texts<std::string_view>(view));
    if (auto ok = insert.run(); !ok) return ok.error();
    i += rows;
  }
  for (const auto& p : pending) {
    latest_ms = std::max(latest_ms, p.time_ms);
    if (p.key.size > 0) {
      const std::string_view key = view(p.key);
      const std::int64_t seconds = p.time_ms / 1000;
      if (auto it = last_used.find(key); it != last_used.end())
        it->second = std::max(it->second, seconds);
      else
        last_used.emplace(key, seconds);
    }
  }
  for (const auto& [key, seconds] : last_used) {
    statements.touch.bind(1, key).bind(2, seconds);
    if (auto ok = statements.touch.run(); !ok) return ok.error();
  }
  return statements.batches.mark(*after, db.last_insert_rowid(), latest_ms);
}

Result<Done> write_batch(Database& db, LedgerStatements& statements,
                         const std::vector<PendingRow>& pending, std::string_view text) {
  if (auto ok = db.exec("BEGIN IMMEDIATE"); !ok) return ok.error();
  if (auto written = write_rows(db, statements, pending, text); !written) {
    (void)db.exec("ROLLBACK");
    return written.error();
  }
  return db.exec("COMMIT");
}

}  // namespace

UsageLedger::UsageLedger(std::string path, std::size_t capacity)
    : path_(std::move(path)), capacity_(capacity), thread_([this] { run(); }) {}

UsageLedger::~UsageLedger() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

bool UsageLedger::submit(const UsageRowView& row) {
  std::unique_lock lock(mutex_);
  if (pending_.size() >= capacity_) {
    if (dropped_++ % 1000 == 0)
      spdlog::warn("usage ledger: buffer full ({} rows), {} row(s) dropped so far", capacity_,
                   dropped_);
    return false;
  }
  pending_.push_back(row.with_texts<TextSpan>([&](std::string_view text) {
    const TextSpan span{static_cast<std::uint32_t>(pending_text_.size()),
                        static_cast<std::uint32_t>(text.size())};
    pending_text_.append(text);
    return span;
  }));
  ++submitted_;
  // A batch's first row starts the writer's interval: one wake-up a batch.
  if (writer_idle_) {
    writer_idle_ = false;
    lock.unlock();
    wake_.notify_one();
  }
  return true;
}

void UsageLedger::flush() {
  std::unique_lock lock(mutex_);
  const auto target = submitted_;
  flush_wanted_ = true;
  wake_.notify_all();
  written_.wait(lock, [&] { return done_ >= target || stop_; });
}

bool UsageLedger::wait_written(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  const auto target = submitted_;
  return written_.wait_for(lock, timeout, [&] { return done_ >= target; });
}

std::uint64_t UsageLedger::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

std::size_t UsageLedger::buffered_bytes() const {
  std::lock_guard lock(mutex_);
  return pending_.capacity() * sizeof(PendingRow) + pending_text_.capacity() + writer_bytes_;
}

void UsageLedger::run() {
  // A batch takes milliseconds of CPU. Under SCHED_IDLE the scheduler
  // preempts it the moment the I/O thread wakes and counts its core as free
  // when placing that thread; at nice 10 the I/O thread still waited behind
  // it for a time slice (1-connection p99 2.9 ms instead of 0.5 ms). On a box
  // saturated by nice-0 threads it still gets a share (weight 3 against 1024
  // each: hundreds of rows a second), and a full buffer is logged.
  const sched_param idle{};
  pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
  std::optional<Database> db;
  std::optional<LedgerStatements> statements;
  bool failing = false;
  std::vector<PendingRow> batch;
  std::string batch_text;
  std::unique_lock lock(mutex_);
  for (;;) {
    // Nothing to write: asleep until a row comes, not woken by a timer ten
    // times a second on an idle box (or between a stream's first and last rows).
    writer_idle_ = pending_.empty() && !stop_ && !flush_wanted_;
    wake_.wait(lock, [this] { return !writer_idle_ || stop_ || flush_wanted_; });
    writer_idle_ = false;
    // Waiting out the interval even with rows pending is what makes a batch:
    // woken by every row, the thread would commit one transaction per request
    // and take a core from the I/O thread under load.
    wake_.wait_for(lock, batch_interval, [this] { return stop_ || flush_wanted_; });
    flush_wanted_ = false;
    batch.clear();
    batch.swap(pending_);
    batch_text.clear();
    batch_text.swap(pending_text_);
    const bool stopping = stop_;
    lock.unlock();
    if (!batch.empty()) {
      if (!db) {
        auto opened = open_state_db(path_);
        if (opened) {
          db.emplace(std::move(*opened));
          // Rows go at the right edge of the table: a few pages, not SQLite's default 2 MiB of
          // cache, which the process kept at its peak after a burst of requests.
          (void)db->exec("PRAGMA cache_size=-256");
          if (auto prepared = prepare_statements(*db)) {
            statements.emplace(std::move(*prepared));
          } else {
            spdlog::error("usage ledger: {}", prepared.error().message);
            db.reset();
          }
        } else if (!failing) {
          spdlog::error("usage ledger: {}", opened.error().message);
        }
      }
      auto written = db ? write_batch(*db, *statements, batch, batch_text)
                        : Result<Done>(Error{"the state database is not open"});
      if (!written) {
        if (!failing)
          spdlog::error("usage ledger: {} row(s) not written: {}", batch.size(),
                        written.error().message);
        failing = true;
        statements.reset();
        db.reset();
      } else {
        failing = false;
      }
    }
    lock.lock();
    done_ += batch.size();
    give_back_large(batch, kKeptRows);
    give_back_large(batch_text, kKeptTextBytes);
    writer_bytes_ = batch.capacity() * sizeof(PendingRow) + batch_text.capacity();
    written_.notify_all();
    if (stopping && pending_.empty()) break;
  }
}

}  // namespace switchyard::tenancy
