#include "gateway/usage_today.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "tenancy/key_store.h"
#include "tenancy/usage_ledger.h"

namespace switchyard::gateway {
namespace {

using namespace std::chrono_literals;
using Time = UsageToday::Time;

// 2026-12-01 10:00 UTC.
const Time kMorning = Time(std::chrono::seconds(1796119200));
const std::int64_t kMorningMs = 1796119200000;

TEST(UsageToday, CountsRequestsAndTokensPerKey) {
  UsageToday u;
  u.add("alice", 10, 5, kMorning);
  u.add("alice", 1, 2, kMorning + 1h);
  u.add("bob", 7, 0, kMorning);
  const auto a = u.of("alice", kMorning + 2h);
  EXPECT_EQ(a.requests, 2);
  EXPECT_EQ(a.prompt_tokens, 11);
  EXPECT_EQ(a.completion_tokens, 7);
  EXPECT_EQ(u.of("bob", kMorning).requests, 1);
  EXPECT_EQ(u.of("nobody", kMorning).requests, 0);
}

TEST(UsageToday, StartsAgainAtUtcMidnight) {
  UsageToday u;
  u.add("alice", 10, 5, kMorning);
  const Time midnight = kMorning + 14h;
  EXPECT_EQ(u.of("alice", midnight - 1s).requests, 1);
  EXPECT_EQ(u.of("alice", midnight).requests, 0) << "yesterday's usage is not today's";
  u.add("alice", 1, 1, midnight + 1s);
  EXPECT_EQ(u.of("alice", midnight + 2s).requests, 1);
  EXPECT_EQ(u.of("alice", midnight + 2s).prompt_tokens, 1);
}

TEST(UsageToday, SeededWithTodaysLedgerRowsOnly) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("switchyard-usage-today-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto path = (dir / "state.db").string();
  ASSERT_TRUE(tenancy::open_state_db(path));
  {
    tenancy::UsageLedger ledger(path);
    const auto row = [](std::int64_t t, std::string key, int prompt, int completion) {
      tenancy::UsageRow r;
      r.time_ms = t;
      r.request_id = "r" + std::to_string(t);
      r.key = std::move(key);
      r.model = "m";
      r.endpoint = "/v1/chat/completions";
      r.outcome = "ok";
      r.status = 200;
      r.prompt_tokens = prompt;
      r.completion_tokens = completion;
      return r;
    };
    ledger.submit(view_of(row(kMorningMs - 11 * 3600 * 1000, "alice", 1000, 1000)));  // yesterday
    ledger.submit(view_of(row(kMorningMs - 9 * 3600 * 1000, "alice", 10, 20)));       // 01:00 today
    ledger.submit(view_of(row(kMorningMs, "alice", 1, 2)));
    ledger.submit(view_of(row(kMorningMs, "bob", 3, 4)));
    ledger.flush();
  }
  const auto u = UsageToday::from_ledger(path, kMorning + 1h);
  EXPECT_EQ(u.of("alice", kMorning + 1h).requests, 2);
  EXPECT_EQ(u.of("alice", kMorning + 1h).prompt_tokens, 11);
  EXPECT_EQ(u.of("alice", kMorning + 1h).completion_tokens, 22);
  EXPECT_EQ(u.of("bob", kMorning + 1h).requests, 1);
  std::filesystem::remove_all(dir);
}

TEST(UsageToday, AnUnreadableLedgerStartsEmpty) {
  const auto u = UsageToday::from_ledger("/nonexistent/dir/state.db", kMorning);
  EXPECT_EQ(u.of("alice", kMorning).requests, 0);
}

}  // namespace
}  // namespace switchyard::gateway
