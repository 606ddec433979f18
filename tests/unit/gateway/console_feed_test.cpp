// The console's feed of finished requests: the last kRecent of them, newest
// first, for the dashboard's table.
#include "gateway/console_feed.h"

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include <list>
#include <string>
#include <vector>

#include "gateway/console_routes.h"

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
    ConsoleFeed::Running listed;
    feed.begin(listed, record, key, session);
    feed.finish(listed);
  }
  EXPECT_EQ(ids(), (std::vector<std::string>{"r2", "r1", "r0"}));
  EXPECT_TRUE(feed.running().empty());
  const auto past_the_ring = static_cast<int>(ConsoleFeed::kRecent) + 7;
  for (int i = 3; i < past_the_ring; ++i) {
    RequestRecord record;
    record.id = "r" + std::to_string(i);
    record.model = i % 2 ? "a-model-name-longer-than-a-short-string" : "m";
    ConsoleFeed::Running listed;
    feed.begin(listed, record, key, session);
    feed.finish(listed);
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

// Requests end in any order; each leaves the running list as it ends, the
// rest stay in the order they began, and a request whose context is gone
// without finishing (an exception past the chain) is not listed either.
TEST(ConsoleFeed, ListsRunningRequestsUntilEachEnds) {
  boost::asio::io_context io;
  ConsoleFeed feed(io.get_executor(), [] { return ConsoleFeed::Gauges{}; });
  const std::string key = "alice", session = "s";
  const auto running = [&] {
    std::vector<std::string> out;
    for (const auto& r : feed.running()) out.push_back(r.record->id);
    return out;
  };
  std::vector<RequestRecord> records(4);
  std::vector<ConsoleFeed::Running> listed(3);
  for (std::size_t i = 0; i < listed.size(); ++i) {
    records[i].id = "r" + std::to_string(i);
    feed.begin(listed[i], records[i], key, session);
  }
  feed.finish(listed[1]);
  EXPECT_EQ(running(), (std::vector<std::string>{"r0", "r2"}));
  {
    records[3].id = "gone";
    ConsoleFeed::Running dropped;
    feed.begin(dropped, records[3], key, session);
    EXPECT_EQ(running().size(), 3u);
  }
  EXPECT_EQ(running(), (std::vector<std::string>{"r0", "r2"}));
  feed.finish(listed[0]);
  feed.finish(listed[2]);
  EXPECT_TRUE(running().empty());
  std::vector<std::string> recent;
  feed.each_recent([&](const FinishedRequest& r) { recent.push_back(r.id); });
  EXPECT_EQ(recent, (std::vector<std::string>{"r2", "r0", "r1"}));
}

// A queue of thousands does not make the dashboard's picture megabytes a
// second: it lists the oldest kRunningShown and says how many run.
TEST(ConsoleFeed, ThePictureListsTheOldestRunningRequestsAndCountsAll) {
  boost::asio::io_context io;
  ConsoleFeed feed(io.get_executor(), [] { return ConsoleFeed::Gauges{}; });
  const std::string key = "alice", session;
  const std::size_t n = ConsoleFeed::kRunningShown + 50;
  std::list<RequestRecord> records;
  std::list<ConsoleFeed::Running> listed;
  for (std::size_t i = 0; i < n; ++i) {
    records.emplace_back().id = "r" + std::to_string(i);
    feed.begin(listed.emplace_back(), records.back(), key, session);
  }
  const auto picture = [&] {
    return boost::json::parse(
               console_json({}, ModelCatalog({}), feed, nullptr, nullptr, {}, {}, false))
        .as_object();
  };
  auto body = picture();
  const auto& running = body.at("running").as_array();
  ASSERT_EQ(running.size(), ConsoleFeed::kRunningShown);
  EXPECT_EQ(running.front().at("id").as_string(), "r0");
  EXPECT_EQ(running.back().at("id").as_string(),
            "r" + std::to_string(ConsoleFeed::kRunningShown - 1));
  EXPECT_EQ(body.at("running_total").to_number<std::size_t>(), n);
  // Fewer than the cap: all of them.
  listed.resize(3);
  body = picture();
  EXPECT_EQ(body.at("running").as_array().size(), 3u);
  EXPECT_EQ(body.at("running_total").to_number<std::size_t>(), 3u);
}

}  // namespace
}  // namespace switchyard::gateway
