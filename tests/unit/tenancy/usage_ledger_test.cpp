#include "tenancy/usage_ledger.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace switchyard::tenancy
