#include "obs/metrics_scraper.h"

#include <gtest/gtest.h>

#include "../gateway/fake_engine.h"
#include "../gateway/instance_table.h"
#include "../io_support.h"

namespace switchyard::obs {
namespace {

using namespace std::chrono_literals;
using gateway::testing_support::FakeEngine;
using switchyard::testing_support::run_until;

constexpr const char* kMetrics =
    "# TYPE llamacpp:requests_processing gauge\n"
    "llamacpp:requests_processing 0\n";

struct ScrapedBox {
  boost::asio::io_context io;
  FakeEngine engine{io, 200, kMetrics, {}, "text/plain"};
  MetricsScraper::InstanceTable table;
  MetricsScraper scraper{io.get_executor(), table, 5ms};
  EngineWork work;
  int rounds = 0;                // times the scraper asked for the work
  std::vector<bool> after_idle;  // whether each scrape came with idle_at

  ScrapedBox() {
    auto& inst = gateway::testing_support::add_instance(table, "m", 1);
    inst.url = *http::parse_url("http://127.0.0.1:" + std::to_string(engine.port()));
    scraper.on_work([this](std::size_t) {
      ++rounds;
      return work;
    });
    scraper.on_scrape([this](const fleet::Instance&, const EngineMetrics& m) {
      after_idle.push_back(m.idle_at.has_value());
    });
    scraper.start();
  }
  ~ScrapedBox() { scraper.stop(); }
  // Runs `n` more of the scraper's rounds.
  void rounds_more(int n) {
    const int until = rounds + n;
    run_until(io, [&] { return rounds >= until; });
  }
  void scrapes_reach(int n) {
    run_until(io, [&] { return engine.requests >= n; });
  }
};

// Each phase ends with rounds that skip, so no scrape is under way when
// the test counts them.
TEST(MetricsScraper, AnIdleEngineIsScrapedOnceThenNotUntilItWorks) {
  ScrapedBox box;
  box.rounds_more(6);
  EXPECT_EQ(box.engine.requests, 2) << "a new engine twice (a window), then idle";

  box.work = {1, 1};  // a request started
  box.scrapes_reach(5);
  EXPECT_GE(box.engine.requests, 5) << "every round while it works";
  box.work = {0, 1};  // it ended: one more for the final figures
  box.rounds_more(4);
  int worked = box.engine.requests;
  box.rounds_more(4);
  EXPECT_EQ(box.engine.requests, worked) << "idle again";
  ASSERT_GE(box.after_idle.size(), 4u);
  EXPECT_FALSE(box.after_idle[0]);
  EXPECT_FALSE(box.after_idle[1]);
  EXPECT_TRUE(box.after_idle[2]) << "the first scrape after idle rounds says so";
  for (std::size_t i = 3; i < box.after_idle.size(); ++i) EXPECT_FALSE(box.after_idle[i]);

  box.work = {0, 2};  // one started and ended between two rounds
  box.scrapes_reach(worked + 1);
  box.rounds_more(4);
  EXPECT_EQ(box.engine.requests, worked + 1);
  box.table[0]->engine_sleep = fleet::Instance::EngineSleep::asleep;
  box.work = {1, 3};
  box.rounds_more(4);
  EXPECT_EQ(box.engine.requests, worked + 1) << "asleep by its own word: a scrape would wake it";
  box.table[0]->engine_sleep = fleet::Instance::EngineSleep::awake;
  box.work = {0, 3};
  box.scrapes_reach(worked + 2);
  box.rounds_more(4);
  EXPECT_EQ(box.engine.requests, worked + 2);
  worked += 1;
  ++box.table[0]->generation;  // a new engine process: twice again
  box.scrapes_reach(worked + 3);
  box.rounds_more(4);
  EXPECT_EQ(box.engine.requests, worked + 3);
}

}  // namespace
}  // namespace switchyard::obs
