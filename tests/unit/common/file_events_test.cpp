#include "common/file_events.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>

namespace switchyard {
namespace {

using Woken = FileEvents::Woken;
using std::chrono::milliseconds;
// Longer than any write takes to be reported, short enough that a test
// whose write goes unseen fails rather than hangs.
constexpr auto kLong = std::chrono::seconds(10);

struct FileEventsTest : testing::Test {
  void SetUp() override {
    dir = std::filesystem::temp_directory_path() /
          ("switchyard-events-" + std::to_string(::getpid()) + "-" +
           testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  void write(const std::string& name) { std::ofstream(dir / name, std::ios::app) << "x"; }
  std::filesystem::path dir;
};

TEST_F(FileEventsTest, AWriteToAFollowedFileEndsTheWaitOthersDoNot) {
  FileEvents events(dir, {"state.db", "state.db-wal"});
  ASSERT_TRUE(events.watching());
  write("state.db-wal");
  EXPECT_EQ(events.wait(kLong), Woken::written);
  // Taken: the next wait sees only what comes after.
  EXPECT_EQ(events.wait(milliseconds(0)), Woken::timeout);
  write("fleet.yaml");
  EXPECT_EQ(events.wait(milliseconds(0)), Woken::timeout);
  EXPECT_EQ(events.pause(milliseconds(0)), Woken::timeout);
  // A pause does not end at a write, but says there was one.
  write("state.db");
  EXPECT_EQ(events.pause(milliseconds(1)), Woken::written);
}

TEST_F(FileEventsTest, ARenameOntoAFollowedNameIsAWrite) {
  write("backup.db");
  FileEvents events(dir, {"state.db"});
  std::filesystem::rename(dir / "backup.db", dir / "state.db");
  EXPECT_EQ(events.wait(kLong), Woken::written);
  std::filesystem::remove(dir / "state.db");
  EXPECT_EQ(events.wait(kLong), Woken::written);
}

TEST_F(FileEventsTest, StopEndsAWaitFromAnotherThreadAndEveryLaterOne) {
  FileEvents events(dir, {"state.db"});
  auto waited = std::async(std::launch::async, [&] { return events.wait(kLong); });
  events.stop();
  ASSERT_EQ(waited.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(waited.get(), Woken::stopped);
  EXPECT_EQ(events.pause(kLong), Woken::stopped);
  write("state.db");
  EXPECT_EQ(events.wait(kLong), Woken::stopped);
}

// Its directory gone, nothing more can be followed: the caller is told, and
// from then on waits out its timeouts.
TEST_F(FileEventsTest, ItsDirectoryRemovedEndsTheWatch) {
  FileEvents events(dir, {"state.db"});
  std::filesystem::remove_all(dir);
  EXPECT_EQ(events.wait(kLong), Woken::written);
  EXPECT_FALSE(events.watching());
  EXPECT_EQ(events.wait(milliseconds(1)), Woken::timeout);
}

TEST_F(FileEventsTest, WithoutADirectoryItFollowsNothingAndWaitsOutItsTimeout) {
  FileEvents events(dir / "missing", {"state.db"});
  EXPECT_FALSE(events.watching());
  EXPECT_EQ(events.wait(milliseconds(1)), Woken::timeout);
}

}  // namespace
}  // namespace switchyard
