#include "common/file_events.h"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <utility>

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

// A write wakes the wait as it begins: the wait lets what it began finish.
TEST_F(FileEventsTest, AWaitEndsItsSettleAfterAWrite) {
  FileEvents events(dir, {"state.db"});
  write("state.db");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(events.wait(kLong, milliseconds(30)), Woken::written);
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(30));
  EXPECT_EQ(events.wait(milliseconds(0)), Woken::timeout);
}

// The gateway's log may be written beside its database hundreds of times a
// second: the waiter sleeps through it (its voluntary context switches
// counted: one a wake-up), woken by the stop alone.
TEST_F(FileEventsTest, WritesToOtherFilesInTheDirectoryDoNotWakeIt) {
  write("state.db");
  FileEvents events(dir, {"state.db"});
  std::promise<void> started;
  auto waited = std::async(std::launch::async, [&] {
    rusage before{}, after{};
    ::getrusage(RUSAGE_THREAD, &before);
    started.set_value();
    const Woken woken = events.wait(kLong);
    ::getrusage(RUSAGE_THREAD, &after);
    return std::pair(woken, after.ru_nvcsw - before.ru_nvcsw);
  });
  started.get_future().wait();
  for (int i = 0; i < 300; ++i) write("switchyard.log");
  events.stop();
  const auto [woken, switches] = waited.get();
  EXPECT_EQ(woken, Woken::stopped);
  EXPECT_LT(switches, 10);
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
