#include "common/buffered_log.h"

#include <gtest/gtest.h>

#include <spdlog/spdlog.h>

namespace switchyard {
namespace {

// The gateway flushes its log soon after the first line of each batch: the
// hook is what tells it, and nothing else does (a quiet gateway sleeps).
TEST(BufferedLog, TheHookHearsOfTheFirstLineOfEachBatchOnly) {
  const auto previous = spdlog::default_logger();
  use_buffered_stdout_log();
  spdlog::set_level(spdlog::level::info);
  int calls = 0;
  {
    const BufferedLogHook hook([&] { ++calls; });
    spdlog::info("buffered log test: the first line of a batch");
    spdlog::info("buffered log test: a second line of the same batch");
    EXPECT_EQ(calls, 1);
    spdlog::default_logger()->flush();
    spdlog::info("buffered log test: a new batch");
    EXPECT_EQ(calls, 2);
    spdlog::warn("buffered log test: a warning joins the batch and writes it at once");
    EXPECT_EQ(calls, 2);
    spdlog::info("buffered log test: the batch after the warning");
    EXPECT_EQ(calls, 3);
  }
  spdlog::default_logger()->flush();
  spdlog::info("buffered log test: no hook any more");
  EXPECT_EQ(calls, 3);
  spdlog::default_logger()->flush();
  spdlog::set_default_logger(previous);
}

}  // namespace
}  // namespace switchyard
