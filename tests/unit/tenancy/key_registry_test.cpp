// The keys in force: looked up by digest (issue 32), assembled from YAML,
// SQLite and Redis, failing closed (issue 31: a Redis restarted empty does
// not take keys away; authentication once on stays on), and Redis records
// signed with redis_secret.
#include <gtest/gtest.h>

#include "tenancy/key_records.h"
#include "tenancy/key_registry.h"

namespace switchyard::tenancy {
namespace {

KeyRecord stored(std::string name, std::int64_t version = 1) {
  KeyRecord r;
  r.name = name;
  r.prefix = "sy-" + name;
  r.hash = sha256("sy-" + name);
  r.created = 1'700'000'000;
  r.version = version;
  return r;
}

TEST(KeyDigestTable, ManyKeysEachFoundByItsDigest) {
  std::vector<KeyRecord> records;
  for (int i = 0; i < 20'000; ++i) records.push_back(stored("k" + std::to_string(i)));
  records[7].revoked = 5;
  const KeyTable table({{"ops", "sk-ops", {}}}, records, true);
  ASSERT_NE(table.find("sk-ops"), nullptr);
  EXPECT_EQ(table.find("sk-ops")->name, "ops");
  EXPECT_EQ(table.find("sy-k19999")->name, "k19999");
  EXPECT_EQ(table.find("sy-k0")->name, "k0");
  EXPECT_EQ(table.find("sy-k7"), nullptr);  // revoked
  EXPECT_EQ(table.find("sy-k20000"), nullptr);
  EXPECT_EQ(table.find(""), nullptr);
  EXPECT_EQ(table.by_name("k123")->hash, sha256("sy-k123"));
  EXPECT_EQ(table.by_name("k7"), nullptr);
  EXPECT_EQ(table.by_name("nobody"), nullptr);
}

TEST(KeyDigestTable, AStaticKeyWinsOverAStoredOneWithItsDigest) {
  KeyRecord twin = stored("twin");
  twin.hash = sha256("sk-same");
  const KeyTable table({{"static", "sk-same", {}}}, {twin}, true);
  EXPECT_EQ(table.find("sk-same")->name, "static");
}

TEST(KeyRegistry, RedisRecordsAreHeldWhenRedisHasFewer) {
  KeyRegistry registry({}, {stored("local")});
  EXPECT_TRUE(registry.add_shared({stored("alice"), stored("bob")}));
  EXPECT_NE(registry.table()->find("sy-alice"), nullptr);
  // Redis restarted empty, then holds only bob: alice is not dropped.
  EXPECT_FALSE(registry.add_shared({}));
  EXPECT_FALSE(registry.add_shared({stored("bob")}));
  EXPECT_NE(registry.table()->find("sy-alice"), nullptr);
  EXPECT_NE(registry.table()->find("sy-local"), nullptr);
  ASSERT_EQ(registry.records().size(), 3u);  // what this gateway publishes back
  EXPECT_EQ(registry.records()[0].name, "alice");
}

TEST(KeyRegistry, AHigherVersionReplacesALowerOne) {
  KeyRegistry registry({}, {stored("alice", 2)});
  KeyRecord revoked = stored("alice", 3);
  revoked.revoked = 9;
  EXPECT_FALSE(registry.add_shared({stored("alice", 1)}));  // older than the state_db's
  EXPECT_NE(registry.table()->find("sy-alice"), nullptr);
  EXPECT_TRUE(registry.add_shared({revoked}));
  EXPECT_EQ(registry.table()->find("sy-alice"), nullptr);
  EXPECT_FALSE(registry.add_shared({stored("alice", 2)}));  // an old copy cannot undo it
  EXPECT_EQ(registry.table()->find("sy-alice"), nullptr);
}

TEST(KeyRegistry, AuthenticationOnceOnStaysOn) {
  KeyRegistry empty({}, {});
  EXPECT_FALSE(empty.table()->enabled());  // a new install: open, as documented
  KeyRegistry registry({}, {stored("alice")});
  EXPECT_TRUE(registry.table()->enabled());
  // The state_db read back with fewer records (a file swapped): still on.
  EXPECT_TRUE(registry.set_stored({}));
  EXPECT_TRUE(registry.table()->enabled());
  EXPECT_EQ(registry.table()->find("sy-alice"), nullptr);
  // Static keys alone switch it on and, removed, off again.
  KeyRegistry statics({{"ops", "sk-ops", {}}}, {});
  EXPECT_TRUE(statics.table()->enabled());
  EXPECT_TRUE(statics.set_statics({}));
  EXPECT_FALSE(statics.table()->enabled());
}

TEST(KeySignature, HmacSha256MatchesRfc4231) {
  EXPECT_EQ(to_hex(hmac_sha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  // A key longer than the block is hashed first (RFC 4231 test case 6).
  EXPECT_EQ(to_hex(hmac_sha256(std::string(131, '\xaa'),
                               "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(KeySignature, OnlyRecordsSignedWithTheSecretAreAccepted) {
  const KeyRecord alice = stored("alice", 4);
  const std::string signed_text = encode_record(alice, "s3cret");
  auto back = decode_record("alice", signed_text, "s3cret");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, alice);
  // Unsigned (what anyone with write access could HSET), another secret,
  // another name, a field changed after signing: all refused.
  const auto unsigned_record = decode_record("alice", encode_record(alice), "s3cret");
  ASSERT_FALSE(unsigned_record);
  EXPECT_NE(unsigned_record.error().message.find("sig"), std::string::npos);
  EXPECT_FALSE(decode_record("alice", encode_record(alice, "other"), "s3cret"));
  EXPECT_FALSE(decode_record("mallory", signed_text, "s3cret"));
  std::string tampered = signed_text;
  tampered.replace(tampered.find("version=4"), 9, "version=9");
  EXPECT_FALSE(decode_record("alice", tampered, "s3cret"));
  // Without a secret the signature line is not needed, nor in the way.
  EXPECT_TRUE(decode_record("alice", signed_text));
  EXPECT_TRUE(put_record_command(alice, "s3cret")[8].ends_with(
      signed_text.substr(signed_text.rfind("sig="))));
}

// With redis: until its records are first read, a key not held is refused
// (the table is pending), even when no source has a key yet.
TEST(KeyRegistry, UntilRedisIsReadTheTableIsPending) {
  KeyRegistry registry({}, {});
  EXPECT_FALSE(registry.table()->enabled());
  EXPECT_TRUE(registry.await_shared());
  EXPECT_TRUE(registry.table()->pending());
  EXPECT_TRUE(registry.table()->enabled());
  EXPECT_TRUE(registry.add_shared({}));  // read: Redis has no key either
  EXPECT_FALSE(registry.table()->pending());
  EXPECT_FALSE(registry.table()->enabled());
  EXPECT_FALSE(registry.add_shared({}));
}

}  // namespace
}  // namespace switchyard::tenancy
