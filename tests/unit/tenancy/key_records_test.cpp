#include "tenancy/key_records.h"

#include <gtest/gtest.h>

#include "tenancy/redis_scripts.h"

namespace switchyard::tenancy {
namespace {

KeyRecord record(std::string name, std::int64_t version) {
  KeyRecord r;
  r.name = std::move(name);
  r.prefix = "sy-abcdefg";
  r.hash = sha256("sy-secret-" + r.name);
  r.created = 1'700'000'000;
  r.version = version;
  return r;
}

TEST(KeyRecords, RoundTripEveryField) {
  KeyRecord r = record("alice", 7);
  r.limits.models = {"qwen-27b", "coder"};
  r.limits.rpm = 60;
  r.limits.tpm = 200000;
  r.limits.tokens_per_day = 5'000'000;
  r.limits.max_concurrency = 2;
  r.limits.max_sessions = 3;
  r.limits.session_idle = std::chrono::minutes(10);
  r.limits.priority = -1;
  r.limits.weight = 2.5;
  r.revoked = 1'700'000'100;
  auto back = decode_record("alice", encode_record(r));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, r);
}

TEST(KeyRecords, UnsetLimitsStayUnset) {
  const KeyRecord r = record("bob", 1);
  auto back = decode_record("bob", encode_record(r));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, r);
  EXPECT_FALSE(back->limits.rpm);
  EXPECT_FALSE(back->limits.max_sessions);
  EXPECT_FALSE(back->revoked);
}

TEST(KeyRecords, NeverHoldsTheKeyOnlyItsDigest) {
  const std::string text = encode_record(record("alice", 1));
  EXPECT_EQ(text.find("sy-secret"), std::string::npos);
  EXPECT_NE(text.find("hash=" + to_hex(sha256("sy-secret-alice"))), std::string::npos);
}

TEST(KeyRecords, ABrokenRecordNamesTheField) {
  std::string text = encode_record(record("alice", 1));
  auto broken = decode_record("alice", text.substr(0, text.find("created=")));
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message.find("created"), std::string::npos);
  const auto at = text.find("rpm=");
  text.insert(at + 4, "many");
  broken = decode_record("alice", text);
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message.find("rpm"), std::string::npos);
  EXPECT_FALSE(decode_record("alice", "version=1\nhash=00\n"));
}

TEST(KeyRecords, MergeTakesTheHigherVersionAndRedisOnATie) {
  KeyRecord local_alice = record("alice", 3), remote_alice = record("alice", 2);
  local_alice.limits.rpm = 10;
  KeyRecord local_bob = record("bob", 1), remote_bob = record("bob", 1);
  remote_bob.limits.rpm = 99;
  KeyRecord local_carol = record("carol", 1);
  KeyRecord remote_dave = record("dave", 4);
  KeyRecord local_erin = record("erin", 1), remote_erin = record("erin", 2);
  remote_erin.revoked = 5;
  const auto merged = merge_records({local_alice, local_bob, local_carol, local_erin},
                                    {remote_dave, remote_erin, remote_alice, remote_bob});
  ASSERT_EQ(merged.size(), 5u);
  EXPECT_EQ(merged[0], local_alice);  // local is newer
  EXPECT_EQ(merged[1], remote_bob);   // a tie: Redis's, as every gateway picks
  EXPECT_EQ(merged[2], local_carol);  // only here
  EXPECT_EQ(merged[3], remote_dave);  // only in Redis
  EXPECT_EQ(merged[4], remote_erin);  // revoked elsewhere, later
}

TEST(KeyRecords, PutCommandRunsTheVersionedScript) {
  const auto c = put_record_command(record("alice", 5));
  ASSERT_EQ(c.size(), 10u);
  EXPECT_EQ(c[0], "EVAL");
  EXPECT_EQ(c[1], redis_scripts::put_key.text);
  EXPECT_EQ(c[2], std::to_string(redis_scripts::put_key.keys));
  EXPECT_EQ(c[3], key_records::records);
  EXPECT_EQ(c[4], key_records::versions);
  EXPECT_EQ(c[5], key_records::version);
  EXPECT_EQ(c[6], "alice");
  EXPECT_EQ(c[7], "5");
  EXPECT_EQ(c[9], key_records::channel);
  // Only a strictly higher version replaces a record.
  EXPECT_NE(redis_scripts::put_key.text.find("if held >= tonumber(ARGV[2]) then return 0"),
            std::string_view::npos);
}

}  // namespace
}  // namespace switchyard::tenancy
