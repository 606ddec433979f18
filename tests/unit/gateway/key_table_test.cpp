#include <gtest/gtest.h>

#include "gateway/admission.h"
#include "gateway/api_keys.h"

namespace switchyard::gateway {
namespace {

http::Headers bearer(std::string_view key) {
  http::Headers h;
  h.add("Authorization", "Bearer " + std::string(key));
  return h;
}

TEST(KeyTable, StaticAndStoredKeysByDigest) {
  tenancy::StaticKey ops{"ops", "sk-ops", {}};
  tenancy::KeyRecord alice;
  alice.name = "alice";
  alice.hash = tenancy::sha256("sy-alice");
  tenancy::KeyRecord gone;
  gone.name = "gone";
  gone.hash = tenancy::sha256("sy-gone");
  gone.revoked = 5;
  ApiKeys keys({ops}, {alice, gone}, true);
  ASSERT_TRUE(keys.enabled());
  ASSERT_NE(keys.find(bearer("sk-ops")), nullptr);
  EXPECT_EQ(keys.find(bearer("sk-ops"))->name, "ops");
  EXPECT_EQ(keys.find(bearer("sy-alice"))->name, "alice");
  EXPECT_EQ(keys.find(bearer("sy-gone")), nullptr);  // revoked
  EXPECT_EQ(keys.find(bearer("sy-alic")), nullptr);
  EXPECT_EQ(keys.by_name("gone"), nullptr);
  EXPECT_NE(keys.by_name("alice"), nullptr);
}

TEST(KeyTable, AKeyFoundAtTheHeadIsTakenBackFromItsNoteOnlyFromTheSameTable) {
  tenancy::StaticKey ops{"ops", "sk-ops", {}};
  tenancy::StaticKey ci{"ci", "sk-ci", {}};
  ApiKeys keys({ops, ci}, {}, true);
  const auto note = keys.note(keys.find(bearer("sk-ci")));
  ASSERT_NE(note, 0u);
  ASSERT_NE(keys.by_note(note), nullptr);
  EXPECT_EQ(keys.by_note(note)->name, "ci");
  EXPECT_EQ(keys.note(nullptr), 0u);
  EXPECT_EQ(keys.by_note(0), nullptr);
  // The same keys published again (a reload, a revocation elsewhere): a
  // note from before is not read, the key is looked up again.
  const ApiKeys republished({ops, ci}, {}, true);
  EXPECT_EQ(republished.by_note(note), nullptr);
}

TEST(KeyTable, RevokingTheLastStoredKeyKeepsAuthenticationOn) {
  tenancy::KeyRecord gone;
  gone.name = "gone";
  gone.revoked = 1;
  EXPECT_TRUE(ApiKeys({}, {gone}, true).enabled());
  EXPECT_FALSE(ApiKeys({}, {}, false).enabled());
}

TEST(Admission, ResetTextLikeOpenAI) {
  using namespace std::chrono_literals;
  EXPECT_EQ(reset_text(250ms), "250ms");
  EXPECT_EQ(reset_text(6s), "6s");
  EXPECT_EQ(reset_text(90s), "1m30s");
  EXPECT_EQ(reset_text(3723s), "1h2m3s");
}

}  // namespace
}  // namespace switchyard::gateway
