// The console's feed of finished requests: the last kRecent of them, newest
// first, for the dashboard's table.
#include "gateway/console_feed.h"

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>

#include <string>
#include <vector>

namespace switchyard::gateway {
namespace {

TEST(ConsoleFeed, KeepsTheLastFinishedRequestsNewestFirst) {
  boost::asio::io_context io;
  ConsoleFeed feed(io.get_executor(), [] { return ConsoleFeed::Gauges{}; });
  const std::string key = "alice", session;
  const auto ids = [&] {
    std::vector<std::string> out;
    feed.each_recent([&](const FinishedRequest& r) { out.push_back(r.id); });
    return out;
  };
  EXPECT_TRUE(ids().empty());
  for (int i = 0; i < 3; ++i) {
    RequestRecord record;
    record.id = "r" + std::to_string(i);
    feed.begin(record, key, session);
    feed.finish(record, key, session);
  }
  EXPECT_EQ(ids(), (std::vector<std::string>{"r2", "r1", "r0"}));
  EXPECT_TRUE(feed.running().empty());
  const auto past_the_ring = static_cast<int>(ConsoleFeed::kRecent) + 7;
  for (int i = 3; i < past_the_ring; ++i) {
    RequestRecord record;
    record.id = "r" + std::to_string(i);
    record.model = i % 2 ? "a-model-name-longer-than-a-short-string" : "m";
    feed.finish(record, key, session);
  }
  const auto kept = ids();
  ASSERT_EQ(kept.size(), ConsoleFeed::kRecent);
  EXPECT_EQ(kept.front(), "r" + std::to_string(past_the_ring - 1));
  EXPECT_EQ(kept.back(),
            "r" + std::to_string(past_the_ring - static_cast<int>(ConsoleFeed::kRecent)));
  feed.each_recent([&](const FinishedRequest& r) {
    const int n = std::stoi(r.id.substr(1));
    EXPECT_EQ(r.model, n % 2 ? "a-model-name-longer-than-a-short-string" : "m") << r.id;
    EXPECT_EQ(r.key, "alice");
  });
}

}  // namespace
}  // namespace switchyard::gateway
