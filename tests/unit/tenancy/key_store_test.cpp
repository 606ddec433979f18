#include "tenancy/key_store.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tenancy/key_watcher.h"

namespace switchyard::tenancy {
namespace {

struct TempDb : testing::Test {
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("switchyard-keys-" + std::to_string(::getpid()) + "-" +
           testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    path = (dir / "state.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::filesystem::path dir;
  std::string path;
};

using KeyStoreTest = TempDb;

TEST_F(KeyStoreTest, StoresDigestsAndLimitsNeverTheKey) {
  auto store = KeyStore::open(path);
  ASSERT_TRUE(store) << store.error().message;
  fleet::KeyLimits limits;
  limits.rpm = 10;
  limits.max_sessions = 2;
  limits.models = {"a", "b"};
  limits.weight = 2.5;
  auto key = store->create("alice", limits, 1000);
  ASSERT_TRUE(key) << key.error().message;
  EXPECT_EQ(key->rfind("sy-", 0), 0u);
  auto found = store->find("alice");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->hash, sha256(*key));
  EXPECT_EQ(found->prefix, key->substr(0, 10));
  EXPECT_EQ(found->limits, limits);
  EXPECT_EQ(found->created, 1000);
  EXPECT_FALSE(found->revoked);
  EXPECT_FALSE(store->create("alice", {}, 1001));  // names are unique
  EXPECT_FALSE(store->create("no spaces", {}, 1001));
}

TEST_F(KeyStoreTest, EveryChangeBumpsTheVersion) {
  auto store = KeyStore::open(path);
  ASSERT_TRUE(store);
  const auto v0 = *store->version();
  ASSERT_TRUE(store->create("bob", {}, 1));
  const auto v1 = *store->version();
  EXPECT_NE(v1, v0);
  fleet::KeyLimits l;
  l.tpm = 500;
  ASSERT_TRUE(store->update("bob", l));
  const auto v2 = *store->version();
  EXPECT_NE(v2, v1);
  ASSERT_TRUE(store->revoke("bob", 2));
  EXPECT_NE(*store->version(), v2);
  EXPECT_FALSE(store->revoke("bob", 3));  // already
  EXPECT_FALSE(store->update("nobody", l));
  auto all = store->list();
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].revoked, 2);
  EXPECT_EQ((*all)[0].limits.tpm, 500);
}

TEST_F(KeyStoreTest, TheWatcherSeesAnotherConnectionsChange) {
  auto store = KeyStore::open(path);
  ASSERT_TRUE(store);
  auto initial = load_stored_keys(path);
  ASSERT_TRUE(initial);
  std::mutex m;
  std::condition_variable cv;
  std::optional<StoredKeys> seen;
  KeyWatcher watcher(path, initial->version, std::chrono::milliseconds(10), [&](StoredKeys k) {
    std::lock_guard lock(m);
    seen = std::move(k);
    cv.notify_all();
  });
  ASSERT_TRUE(store->create("carol", {}, 1));
  std::unique_lock lock(m);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return seen.has_value(); }));
  ASSERT_EQ(seen->keys.size(), 1u);
  EXPECT_EQ(seen->keys[0].name, "carol");
}

}  // namespace
}  // namespace switchyard::tenancy
