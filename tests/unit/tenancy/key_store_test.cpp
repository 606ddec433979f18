#include "tenancy/key_store.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

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
  tenancy::KeyLimits limits;
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
  tenancy::KeyLimits l;
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

TEST_F(KeyStoreTest, EachRecordCountsItsOwnVersion) {
  auto store = KeyStore::open(path);
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->create("bob", {}, 1));
  ASSERT_TRUE(store->create("carol", {}, 1));
  EXPECT_EQ(store->find("bob")->version, 1);
  tenancy::KeyLimits l;
  l.rpm = 5;
  ASSERT_TRUE(store->update("bob", l));
  EXPECT_EQ(store->find("bob")->version, 2);
  ASSERT_TRUE(store->revoke("bob", 9));
  EXPECT_EQ(store->find("bob")->version, 3);
  EXPECT_EQ(store->find("carol")->version, 1);
}

TEST_F(KeyStoreTest, PutTakesOnlyANewerCopy) {
  auto store = KeyStore::open(path);
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->create("bob", {}, 1));
  auto bob = *store->find("bob");
  const auto v0 = *store->version();
  bob.limits.rpm = 7;
  EXPECT_FALSE(*store->put(bob));  // the same version: kept as it is
  EXPECT_FALSE(store->find("bob")->limits.rpm);
  bob.version = 4;
  EXPECT_TRUE(*store->put(bob));
  EXPECT_EQ(store->find("bob")->limits.rpm, 7);
  EXPECT_EQ(store->find("bob")->version, 4);
  EXPECT_NE(*store->version(), v0);  // the watcher sees it
  KeyRecord dave = bob;
  dave.name = "dave";
  dave.hash = sha256("another key");
  EXPECT_TRUE(*store->put(dave));  // a record this file did not have
  EXPECT_EQ(store->find("dave")->version, 4);
}

TEST_F(KeyStoreTest, AFileFromBeforeVersionsGetsThem) {
  {
    auto db = Database::open(path);
    ASSERT_TRUE(db);
    ASSERT_TRUE(db->exec(
        "CREATE TABLE keys (name TEXT PRIMARY KEY, prefix TEXT NOT NULL, hash BLOB NOT NULL "
        "UNIQUE, models TEXT NOT NULL DEFAULT '', rpm INTEGER, tpm INTEGER, tokens_per_day "
        "INTEGER, max_concurrency INTEGER, max_sessions INTEGER, session_idle_ms INTEGER NOT "
        "NULL, priority INTEGER NOT NULL DEFAULT 0, weight REAL NOT NULL DEFAULT 1, created "
        "INTEGER NOT NULL, last_used INTEGER, revoked INTEGER);"
        "INSERT INTO keys (name, prefix, hash, session_idle_ms, created) "
        "VALUES ('old', 'sy-old', x'00', 300000, 1);"));
  }
  auto store = KeyStore::open(path);
  ASSERT_TRUE(store) << store.error().message;
  auto old = store->find("old");
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_EQ(old->version, 1);
  ASSERT_TRUE(store->revoke("old", 2));
  EXPECT_EQ(store->find("old")->version, 2);
}

// What a watcher has handed on, and when it has read the database.
struct Seen {
  std::mutex m;
  std::condition_variable cv;
  std::optional<StoredKeys> keys;
  std::function<void(StoredKeys)> callback() {
    return [this](StoredKeys k) {
      std::lock_guard lock(m);
      keys = std::move(k);
      cv.notify_all();
    };
  }
  bool wait_for_keys(std::size_t n) {
    std::unique_lock lock(m);
    return cv.wait_for(lock, std::chrono::seconds(5),
                       [&] { return keys && keys->keys.size() == n; });
  }
};

// A watcher of `path` from the keys there now, handing them on to `seen`,
// once quiet. Its backstop an hour away, only the writes themselves can
// wake it in a test.
std::unique_ptr<KeyWatcher> quiet_watcher(const std::string& path, Seen& seen) {
  auto initial = load_stored_keys(path);
  if (!initial) return nullptr;
  auto watcher = std::make_unique<KeyWatcher>(path, initial->version, std::chrono::milliseconds(10),
                                              std::chrono::hours(1), seen.callback());
  if (!watcher->wait_idle(std::chrono::seconds(5))) return nullptr;
  return watcher;
}

TEST_F(KeyStoreTest, TheWatcherSeesAnotherConnectionsChange) {
  auto store = KeyStore::open(path);
  ASSERT_TRUE(store);
  Seen seen;
  auto watcher = quiet_watcher(path, seen);
  ASSERT_TRUE(watcher);
  ASSERT_TRUE(store->create("carol", {}, 1));
  ASSERT_TRUE(seen.wait_for_keys(1));
  EXPECT_EQ(seen.keys->keys[0].name, "carol");
  ASSERT_TRUE(watcher->wait_idle(std::chrono::seconds(5)));
  ASSERT_TRUE(store->create("dave", {}, 2));
  EXPECT_TRUE(seen.wait_for_keys(2));
}

// A backup restored by moving it over the database writes nothing to the
// old file: the rename itself wakes the watcher.
TEST_F(KeyStoreTest, TheWatcherReadsADatabaseMovedOverItsFile) {
  {
    auto store = KeyStore::open(path);
    ASSERT_TRUE(store);
  }
  const std::string backup = (dir / "backup.db").string();
  {
    auto store = KeyStore::open(backup);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->create("erin", {}, 1));
  }
  Seen seen;
  auto watcher = quiet_watcher(path, seen);
  ASSERT_TRUE(watcher);
  std::filesystem::rename(backup, path);
  ASSERT_TRUE(seen.wait_for_keys(1));
  EXPECT_EQ(seen.keys->keys[0].name, "erin");
}

using KeyFileTest = TempDb;

// A read between changes answers from a connection kept open; these are
// what such a connection alone would not see.
TEST_F(KeyFileTest, AKeptConnectionSeesAnotherConnectionsChange) {
  auto store = KeyStore::open(path);
  ASSERT_TRUE(store);
  KeyFile file(path);
  auto first = file.read_if_changed(-1);
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_TRUE(*first);
  const auto since = (*first)->version;
  auto unchanged = file.read_if_changed(since);
  ASSERT_TRUE(unchanged);
  EXPECT_FALSE(*unchanged);
  ASSERT_TRUE(store->create("carol", {}, 1));
  auto changed = file.read_if_changed(since);
  ASSERT_TRUE(changed) << changed.error().message;
  ASSERT_TRUE(*changed);
  ASSERT_EQ((*changed)->keys.size(), 1u);
  EXPECT_EQ((*changed)->keys[0].name, "carol");
}

TEST_F(KeyFileTest, AFileDamagedUnderItIsAnErrorNotTheKeysInItsCache) {
  std::int64_t since = 0;
  {
    auto store = KeyStore::open(path);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->create("carol", {}, 1));
    since = *store->version();
  }  // the last connection closed: the keys are in the file, no WAL left
  KeyFile file(path);
  ASSERT_TRUE(file.read_if_changed(-1));
  {
    // Its header overwritten, as `dd if=/dev/urandom of=state.db count=1
    // conv=notrunc` would.
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    const std::string junk(100, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  auto read = file.read_if_changed(since);
  EXPECT_FALSE(read) << "the damage went unseen";
}

TEST_F(KeyFileTest, AFileRemovedOrReplacedUnderItIsReadFromWhatIsThereNow) {
  {
    auto store = KeyStore::open(path);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->create("carol", {}, 1));
  }
  const std::string other = (dir / "other.db").string();
  std::int64_t other_version = 0;
  {
    auto store = KeyStore::open(other);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->create("erin", {}, 1));
    ASSERT_TRUE(store->create("frank", {}, 1));
    other_version = *store->version();
  }
  KeyFile file(path);
  auto first = file.read_if_changed(-1);
  ASSERT_TRUE(first && *first);
  ASSERT_EQ((*first)->keys.size(), 1u);

  std::filesystem::remove(path);
  EXPECT_FALSE(file.read_if_changed((*first)->version)) << "a removed file still answered";

  std::filesystem::rename(other, path);
  auto replaced = file.read_if_changed((*first)->version);
  ASSERT_TRUE(replaced) << replaced.error().message;
  ASSERT_TRUE(*replaced);
  EXPECT_EQ((*replaced)->version, other_version);
  EXPECT_EQ((*replaced)->keys.size(), 2u);
}

}  // namespace
}  // namespace switchyard::tenancy
