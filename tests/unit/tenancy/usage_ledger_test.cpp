#include "tenancy/usage_ledger.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "tenancy/key_store.h"
#include "tenancy/usage_report.h"

namespace switchyard::tenancy {
namespace {

struct LedgerTest : testing::Test {
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("switchyard-ledger-" + std::to_string(::getpid()) + "-" +
           testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    path = (dir / "state.db").string();
    ASSERT_TRUE(open_state_db(path));
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  static UsageRow row(std::int64_t t, std::string key, std::string model, int prompt,
                      int completion, int status = 200) {
    UsageRow r;
    r.time_ms = t;
    r.request_id = "r" + std::to_string(t);
    r.key = std::move(key);
    r.model = std::move(model);
    r.endpoint = "/v1/chat/completions";
    r.outcome = status < 400 ? "ok" : "error";
    r.status = status;
    r.prompt_tokens = prompt;
    r.completion_tokens = completion;
    r.duration_ms = 10;
    return r;
  }
  std::filesystem::path dir;
  std::string path;
};

TEST_F(LedgerTest, RowsAreWrittenInBatchesAndTotalled) {
  {
    UsageLedger ledger(path);
    EXPECT_TRUE(ledger.submit(view_of(row(1000, "alice", "m", 10, 5))));
    EXPECT_TRUE(ledger.submit(view_of(row(2000, "alice", "n", 20, 5))));
    EXPECT_TRUE(ledger.submit(view_of(row(3000, "bob", "m", 1, 1, 429))));
    ledger.flush();
    auto db = Database::open(path, true);
    ASSERT_TRUE(db);
    auto by_key = usage_totals(*db, 0, GroupBy::key);
    ASSERT_TRUE(by_key) << by_key.error().message;
    ASSERT_EQ(by_key->size(), 2u);
    EXPECT_EQ((*by_key)[0].group, "alice");
    EXPECT_EQ((*by_key)[0].requests, 2);
    EXPECT_EQ((*by_key)[0].prompt_tokens, 30);
    EXPECT_EQ((*by_key)[1].errors, 1);
    auto since = usage_rows(*db, 2000);
    ASSERT_TRUE(since);
    ASSERT_EQ(since->size(), 2u);
    EXPECT_EQ((*since)[0].model, "n");
    // Every text as it was submitted (the ledger packs them into one buffer).
    EXPECT_EQ((*since)[0].request_id, "r2000");
    EXPECT_EQ((*since)[0].key, "alice");
    EXPECT_EQ((*since)[0].endpoint, "/v1/chat/completions");
    EXPECT_EQ((*since)[1].outcome, "error");
    EXPECT_EQ((*since)[1].key, "bob");
    EXPECT_EQ((*since)[1].instance, "");
    EXPECT_TRUE(ledger.submit(view_of(row(4000, "carol", "m", 1, 1))));
  }  // the destructor writes what is left
  auto db = Database::open(path, true);
  auto rows = usage_rows(*db, 0);
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->size(), 4u);
}

// An idle writer sleeps until a row comes, not on a timer: the row wakes it
// and is written an interval later, with no flush asked.
TEST_F(LedgerTest, ARowToAnIdleLedgerIsWrittenWithoutAFlush) {
  UsageLedger ledger(path);
  // Written and flushed: the writer is asleep by the time flush() returns.
  ASSERT_TRUE(ledger.submit(view_of(row(500, "alice", "m", 10, 5))));
  ledger.flush();
  ASSERT_TRUE(ledger.submit(view_of(row(1000, "alice", "m", 10, 5))));
  ASSERT_TRUE(ledger.wait_written(std::chrono::seconds(5)));
  auto db = Database::open(path, true);
  ASSERT_TRUE(db);
  auto rows = usage_rows(*db, 0);
  ASSERT_TRUE(rows) << rows.error().message;
  EXPECT_EQ(rows->size(), 2u);
}

// A batch is written sixteen rows to a statement and the rest one by one:
// every column of every row comes back as it was submitted, in either.
TEST_F(LedgerTest, EveryColumnOfABatchOfManyRowsRoundTrips) {
  std::vector<UsageRow> sent;
  for (int i = 0; i < 37; ++i) {
    UsageRow r = row(10'000 + i, "key" + std::to_string(i % 3), "model" + std::to_string(i), i,
                     2 * i, i % 5 == 0 ? 500 : 200);
    r.instance = "gpu" + std::to_string(i);
    r.endpoint = "/v1/e" + std::to_string(i);
    r.cached_tokens = 3 * i;
    if (i % 2) r.max_tokens = 100 + i;
    r.ttft_ms = i % 4 ? 1.5 * i : -1;
    r.duration_ms = 7.25 + i;
    r.session = "s" + std::to_string(i);
    sent.push_back(std::move(r));
  }
  UsageLedger ledger(path);
  for (const auto& r : sent) ASSERT_TRUE(ledger.submit(view_of(r)));
  ledger.flush();
  auto db = Database::open(path, true);
  ASSERT_TRUE(db);
  auto got = usage_rows(*db, 0);
  ASSERT_TRUE(got) << got.error().message;
  ASSERT_EQ(got->size(), sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) {
    const UsageRow& a = sent[i];
    const UsageRow& b = (*got)[i];
    SCOPED_TRACE("row " + std::to_string(i));
    EXPECT_EQ(b.time_ms, a.time_ms);
    EXPECT_EQ(b.request_id, a.request_id);
    EXPECT_EQ(b.key, a.key);
    EXPECT_EQ(b.model, a.model);
    EXPECT_EQ(b.instance, a.instance);
    EXPECT_EQ(b.endpoint, a.endpoint);
    EXPECT_EQ(b.outcome, a.outcome);
    EXPECT_EQ(b.status, a.status);
    EXPECT_EQ(b.prompt_tokens, a.prompt_tokens);
    EXPECT_EQ(b.cached_tokens, a.cached_tokens);
    EXPECT_EQ(b.completion_tokens, a.completion_tokens);
    EXPECT_EQ(b.max_tokens, a.max_tokens);
    EXPECT_EQ(b.ttft_ms, a.ttft_ms);
    EXPECT_EQ(b.duration_ms, a.duration_ms);
    EXPECT_EQ(b.session, a.session);
  }
}

TEST_F(LedgerTest, AFullBufferDropsAndCountsNeverBlocks) {
  UsageLedger ledger(path, /*capacity=*/2);
  int accepted = 0;
  for (int i = 0; i < 1000; ++i) accepted += ledger.submit(view_of(row(i, "k", "m", 1, 1)));
  EXPECT_GE(accepted, 2);
  EXPECT_EQ(ledger.dropped(), static_cast<std::uint64_t>(1000 - accepted));
}

// A burst's buffers are given back once it is written (they stayed
// resident), and the rows after it are written as before.
TEST_F(LedgerTest, ABurstsBuffersAreGivenBackOnceItIsWritten) {
  UsageLedger ledger(path);
  constexpr int kBurst = 16000;  // under the buffer's 16,384 rows
  const std::size_t burst = kBurst * sizeof(BasicUsageRow<UsageLedger::TextSpan>);
  for (int i = 0; i < kBurst; ++i) ASSERT_TRUE(ledger.submit(view_of(row(i, "k", "m", 1, 1))));
  ledger.flush();
  // What may stay (a part of the burst the writer's tick split off, up to
  // 1,024 rows and 64 KiB of text) is under an eighth.
  EXPECT_LT(ledger.buffered_bytes(), burst / 8);
  EXPECT_TRUE(ledger.submit(view_of(row(kBurst, "k", "m", 1, 1))));
  ledger.flush();
  auto db = Database::open(path, true);
  auto rows = usage_rows(*db, 0);
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->size(), static_cast<std::size_t>(kBurst + 1));
}

TEST_F(LedgerTest, LastUsedFollowsTheLedger) {
  auto store = KeyStore::open(path);
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->create("alice", {}, 1));
  UsageLedger ledger(path);
  ledger.submit(view_of(row(5'000'000, "alice", "m", 1, 1)));
  ledger.flush();
  EXPECT_EQ(store->find("alice")->last_used, 5000);
}

// Rows are found by time through the batches' ranges of rowids, not an
// index on time (tenancy/usage_batches.h).
struct LedgerByTimeTest : LedgerTest {
  void write(UsageLedger& ledger, std::initializer_list<std::int64_t> times) {
    for (auto t : times) ASSERT_TRUE(ledger.submit(view_of(row(t, "k", "m", 1, 1))));
    ledger.flush();
  }
  std::vector<std::int64_t> times_since(std::int64_t since) {
    auto db = Database::open(path, true);
    EXPECT_TRUE(db);
    std::vector<std::int64_t> out;
    auto rows = usage_rows(*db, since);
    EXPECT_TRUE(rows) << rows.error().message;
    if (rows)
      for (const auto& r : *rows) out.push_back(r.time_ms);
    auto totals = usage_totals(*db, since, GroupBy::key);
    EXPECT_TRUE(totals) << totals.error().message;
    if (totals) {
      EXPECT_EQ(totals->empty() ? 0 : (*totals)[0].requests, std::ssize(out));
    }
    return out;
  }
  std::int64_t count(const std::string& sql) {
    auto db = Database::open(path, true);
    auto query = db->prepare(sql);
    EXPECT_TRUE(query) << sql;
    auto row = query->step();
    return row && *row ? query->int64(0) : -1;
  }
  void exec(const std::string& sql) {
    auto db = Database::open(path);
    ASSERT_TRUE(db->exec(sql)) << sql;
  }
  using V = std::vector<std::int64_t>;
};

TEST_F(LedgerByTimeTest, RowsSinceATimeAreFoundWhateverOrderTheClockGaveThem) {
  UsageLedger ledger(path);
  write(ledger, {5000, 6000});
  write(ledger, {1000, 2000});  // the clock set back
  write(ledger, {7000});
  EXPECT_EQ(times_since(1500), (V{2000, 5000, 6000, 7000}));
  EXPECT_EQ(times_since(5500), (V{6000, 7000}));
  EXPECT_EQ(times_since(6500), (V{7000}));
  EXPECT_EQ(times_since(8000), V{});
  EXPECT_EQ(times_since(0).size(), 5u);
  EXPECT_EQ(count("SELECT count(*) FROM usage_batches"), 3);
  EXPECT_EQ(count("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'usage'"),
            0);
}

TEST_F(LedgerByTimeTest, RowsWrittenWithoutARangeAreGivenOneBeforeTheNextBatch) {
  // As an earlier version wrote them: no ranges.
  exec(
      "INSERT INTO usage (time_ms, request_id, key, model, instance, endpoint, outcome, status, "
      "prompt_tokens, cached_tokens, completion_tokens, duration_ms, session) VALUES "
      "(100, 'a', 'k', 'm', '', '/', 'ok', 200, 1, 0, 1, 1, ''), "
      "(900, 'b', 'k', 'm', '', '/', 'ok', 200, 1, 0, 1, 1, ''), "
      "(300, 'c', 'k', 'm', '', '/', 'ok', 200, 1, 0, 1, 1, '')");
  EXPECT_EQ(times_since(500), (V{900}));
  UsageLedger ledger(path);
  write(ledger, {50});
  EXPECT_EQ(times_since(500), (V{900}));
  EXPECT_EQ(times_since(200), (V{300, 900}));
  EXPECT_EQ(count("SELECT max_time_ms FROM usage_batches WHERE first_rowid = 1"), 900);
}

TEST_F(LedgerByTimeTest, RowsDeletedAtTheEndLeaveRangesTheNextBatchCanFollow) {
  UsageLedger ledger(path);
  write(ledger, {1000});
  write(ledger, {2000, 3000});
  exec("DELETE FROM usage WHERE rowid > 1");  // by hand: the next rows reuse the rowids
  write(ledger, {500, 4000});
  EXPECT_EQ(times_since(0), (V{500, 1000, 4000}));
  EXPECT_EQ(times_since(3500), (V{4000}));
  EXPECT_EQ(count("SELECT count(*) FROM usage"), 3);
}

TEST_F(LedgerByTimeTest, AFileFromBeforeTheRangesIsReadWholeThenUpgraded) {
  std::filesystem::remove(path);
  exec(
      "CREATE TABLE usage (time_ms INTEGER NOT NULL, request_id TEXT NOT NULL, key TEXT NOT NULL, "
      "model TEXT NOT NULL, instance TEXT NOT NULL, endpoint TEXT NOT NULL, outcome TEXT NOT NULL, "
      "status INTEGER NOT NULL, prompt_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL, "
      "completion_tokens INTEGER NOT NULL, max_tokens INTEGER, ttft_ms REAL, "
      "duration_ms REAL NOT NULL, session TEXT NOT NULL); "
      "CREATE INDEX usage_by_time ON usage (time_ms); "
      "INSERT INTO usage (time_ms, request_id, key, model, instance, endpoint, outcome, status, "
      "prompt_tokens, cached_tokens, completion_tokens, duration_ms, session) VALUES "
      "(100, 'a', 'k', 'm', '', '/', 'ok', 200, 1, 0, 1, 1, ''), "
      "(900, 'b', 'k', 'm', '', '/', 'ok', 200, 1, 0, 1, 1, '')");
  EXPECT_EQ(times_since(500), (V{900}));  // read-only: the ranges cannot be added
  ASSERT_TRUE(open_state_db(path));
  EXPECT_EQ(count("SELECT count(*) FROM sqlite_master WHERE name = 'usage_by_time'"), 0);
  UsageLedger ledger(path);
  write(ledger, {400});
  EXPECT_EQ(times_since(300), (V{400, 900}));
}

}  // namespace
}  // namespace switchyard::tenancy
