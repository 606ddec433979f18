#include "tenancy/redis_scripts.h"

#include <gtest/gtest.h>

#include <charconv>
#include <set>

#include "tenancy/shared_limits.h"

namespace switchyard::tenancy {
namespace {

using redis_scripts::Script;

const Script* const all[] = {&redis_scripts::take_rates, &redis_scripts::correct_rates,
                             &redis_scripts::acquire,    &redis_scripts::renew,
                             &redis_scripts::release,    &redis_scripts::heartbeat};

// The highest KEYS[n] / ARGV[n] a script reads.
int highest(std::string_view text, std::string_view what) {
  const std::string open = std::string(what) + "[";
  int top = 0;
  for (auto at = text.find(open); at != std::string_view::npos; at = text.find(open, at + 1)) {
    int n = 0;
    const char* first = text.data() + at + open.size();
    std::from_chars(first, text.data() + text.size(), n);
    top = std::max(top, n);
  }
  return top;
}

TEST(RedisScripts, EachReadsExactlyTheKeysItDeclares) {
  for (const Script* s : all) EXPECT_EQ(highest(s->text, "KEYS"), s->keys) << s->name;
}

TEST(RedisScripts, ArgumentsMatchWhatSharedLimitsSends) {
  // take_rates/correct_rates: rpm, tpm, cost or deltas, day limit, day TTL.
  EXPECT_EQ(highest(redis_scripts::take_rates.text, "ARGV"), 5);
  EXPECT_EQ(highest(redis_scripts::correct_rates.text, "ARGV"), 5);
  // acquire: member, TTL, max_concurrency, session, max_sessions.
  EXPECT_EQ(highest(redis_scripts::acquire.text, "ARGV"), 5);
  EXPECT_EQ(highest(redis_scripts::renew.text, "ARGV"), 4);
  EXPECT_EQ(highest(redis_scripts::release.text, "ARGV"), 5);  // + channel, message
  EXPECT_EQ(highest(redis_scripts::heartbeat.text, "ARGV"), 2);
}

TEST(RedisScripts, UseRedisClockAndNamesAreUnique) {
  std::set<std::string_view> names;
  for (const Script* s : all) {
    EXPECT_NE(s->text.find("redis.call('TIME')"), std::string_view::npos) << s->name;
    EXPECT_TRUE(names.insert(s->name).second) << s->name;
  }
}

TEST(RedisScripts, LeasesArePrunedBeforeTheyAreCounted) {
  // A crashed gateway's slots free within the lease TTL only if the count
  // never includes expired members.
  const std::string_view a = redis_scripts::acquire.text;
  const auto prune = a.find("ZREMRANGEBYSCORE', KEYS[1]");
  const auto count = a.find("ZCARD', KEYS[1]");
  ASSERT_NE(prune, std::string_view::npos);
  ASSERT_NE(count, std::string_view::npos);
  EXPECT_LT(prune, count);
  const auto seat_prune = a.find("ZREMRANGEBYSCORE', KEYS[2]");
  const auto seat_count = a.find("ZCARD', KEYS[2]");
  EXPECT_LT(seat_prune, seat_count);
  // Renewal never resurrects a lease that expired meanwhile.
  EXPECT_NE(redis_scripts::renew.text.find("'XX'"), std::string_view::npos);
}

TEST(RedisKeys, NamespacedPerKeyInOneClusterSlot) {
  EXPECT_EQ(redis_key("alice", "rpm"), "switchyard:{alice}:rpm");
  EXPECT_EQ(redis_key("api_keys[0]", "day:20788"), "switchyard:{api_keys[0]}:day:20788");
}

TEST(RedisKeys, UtcDay) {
  EXPECT_EQ(utc_day(0), 0);
  EXPECT_EQ(utc_day(86'400'000 - 1), 0);
  EXPECT_EQ(utc_day(86'400'000), 1);
  EXPECT_EQ(utc_day(-1), -1);
  // 2026-12-01 12:00 UTC
  EXPECT_EQ(utc_day(1'796'126'400'000), 20788);
}

TEST(SplitLimits, EachGatewayGetsItsShareNeverTheWhole) {
  tenancy::KeyLimits l;
  l.rpm = 10;
  l.tpm = 1000;
  l.tokens_per_day = 7;
  l.max_concurrency = 2;
  l.max_sessions = 3;
  l.models = {"m"};
  const auto half = split_limits(l, 2);
  EXPECT_EQ(half.rpm, 5);
  EXPECT_EQ(half.tpm, 500);
  EXPECT_EQ(half.tokens_per_day, 3);
  EXPECT_EQ(half.max_concurrency, 1);
  EXPECT_EQ(half.max_sessions, 1);
  EXPECT_EQ(half.models, l.models);
  // Never below 1, and one gateway alone keeps the whole limit.
  EXPECT_EQ(split_limits(l, 5).max_concurrency, 1);
  EXPECT_EQ(split_limits(l, 1), l);
  EXPECT_EQ(split_limits(l, 0), l);
  EXPECT_FALSE(split_limits(tenancy::KeyLimits{}, 2).rpm);
}

TEST(SplitLimits, OnlyCountingLimitsNeedRedis) {
  tenancy::KeyLimits l;
  l.models = {"m"};
  l.priority = 2;
  EXPECT_FALSE(needs_shared_state(l));
  l.max_sessions = 1;
  EXPECT_TRUE(needs_shared_state(l));
}

}  // namespace
}  // namespace switchyard::tenancy
