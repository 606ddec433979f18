#include "tenancy/usage_ledger.h"

#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <map>

#include <spdlog/spdlog.h>

#include "tenancy/key_store.h"

namespace switchyard::tenancy {

namespace {

// Batches are written at most this often, so a burst is one transaction.
constexpr auto batch_interval = std::chrono::milliseconds(100);

using PendingRow = BasicUsageRow<UsageLedger::TextSpan>;

Result<Done> write_batch(Database& db, Statement& insert, Statement& touch,
                         const std::vector<PendingRow>& pending, std::string_view text) {
  if (auto ok = db.exec("BEGIN IMMEDIATE"); !ok) return ok.error();
  std::map<std::string, std::int64_t, std::less<>> last_used;  // seconds, by key
  for (const auto& p : pending) {
    const auto r = p.with_texts<std::string_view>(
        [&](UsageLedger::TextSpan span) { return text.substr(span.at, span.size); });
    // The texts stay in `text` until the statement has run.
    insert.bind(1, r.time_ms)
        .bind_view(2, r.request_id)
        .bind_view(3, r.key)
        .bind_view(4, r.model)
        .bind_view(5, r.instance)
        .bind_view(6, r.endpoint)
        .bind_view(7, r.outcome)
        .bind(8, std::int64_t{r.status})
        .bind(9, r.prompt_tokens)
        .bind(10, r.cached_tokens)
        .bind(11, r.completion_tokens)
        .bind(12, r.max_tokens)
        .bind(14, r.duration_ms)
        .bind_view(15, r.session);
    r.ttft_ms >= 0 ? insert.bind(13, r.ttft_ms) : insert.bind_null(13);
    if (auto ok = insert.run(); !ok) {
      (void)db.exec("ROLLBACK");
      return ok.error();
    }
    if (!r.key.empty()) {
      const std::int64_t seconds = r.time_ms / 1000;
      if (auto it = last_used.find(r.key); it != last_used.end())
        it->second = std::max(it->second, seconds);
      else
        last_used.emplace(r.key, seconds);
    }
  }
  for (const auto& [key, seconds] : last_used) {
    touch.bind(1, key).bind(2, seconds);
    if (auto ok = touch.run(); !ok) {
      (void)db.exec("ROLLBACK");
      return ok.error();
    }
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
  std::lock_guard lock(mutex_);
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
  return true;
}

void UsageLedger::flush() {
  std::unique_lock lock(mutex_);
  const auto target = submitted_;
  flush_wanted_ = true;
  wake_.notify_all();
  written_.wait(lock, [&] { return done_ >= target || stop_; });
}

std::uint64_t UsageLedger::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
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
  std::optional<Statement> insert, touch;
  bool failing = false;
  std::vector<PendingRow> batch;
  std::string batch_text;
  std::unique_lock lock(mutex_);
  for (;;) {
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
          // Rows go at the right edge of the table and of its time index: a
          // few pages, not SQLite's default 2 MiB of cache, which the
          // process kept at its peak after a burst of requests.
          (void)db->exec("PRAGMA cache_size=-256");
          auto i = db->prepare(
              "INSERT INTO usage (time_ms, request_id, key, model, instance, endpoint, outcome, "
              "status, prompt_tokens, cached_tokens, completion_tokens, max_tokens, ttft_ms, "
              "duration_ms, session) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
              "?13, ?14, ?15)");
          auto t = db->prepare(
              "UPDATE keys SET last_used = max(coalesce(last_used, 0), ?2) WHERE name = ?1");
          if (i && t) {
            insert.emplace(std::move(*i));
            touch.emplace(std::move(*t));
          } else {
            spdlog::error("usage ledger: {}", (i ? t.error() : i.error()).message);
            db.reset();
          }
        } else if (!failing) {
          spdlog::error("usage ledger: {}", opened.error().message);
        }
      }
      auto written = db ? write_batch(*db, *insert, *touch, batch, batch_text)
                        : Result<Done>(Error{"the state database is not open"});
      if (!written) {
        if (!failing)
          spdlog::error("usage ledger: {} row(s) not written: {}", batch.size(),
                        written.error().message);
        failing = true;
        insert.reset();
        touch.reset();
        db.reset();
      } else {
        failing = false;
      }
    }
    lock.lock();
    done_ += batch.size();
    written_.notify_all();
    if (stopping && pending_.empty()) break;
  }
}

}  // namespace switchyard::tenancy
