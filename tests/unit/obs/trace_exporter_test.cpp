#include "obs/trace_exporter.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace switchyard::obs {
namespace {

using namespace std::chrono_literals;

std::vector<Span> spans(std::size_t n) {
  std::vector<Span> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i].trace_id[0] = 1;
    out[i].id[0] = static_cast<std::uint8_t>(i + 1);
    out[i].name = "s" + std::to_string(i);
  }
  return out;
}

// A collector the test holds up: each send waits until released.
struct HeldCollector {
  std::mutex mutex;
  std::condition_variable changed;
  bool released = false;
  int entered = 0;
  std::vector<std::string> bodies;

  TraceExporter::Send sender(std::optional<std::string> failure = std::nullopt) {
    return [this, failure](const std::string& body) {
      std::unique_lock lock(mutex);
      ++entered;
      bodies.push_back(body);
      changed.notify_all();
      changed.wait(lock, [&] { return released; });
      return failure;
    };
  }
  void wait_entered(int n) {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(changed.wait_for(lock, 5s, [&] { return entered >= n; }));
  }
  void release() {
    std::lock_guard lock(mutex);
    released = true;
    changed.notify_all();
  }
};

TEST(TraceExporter, AFullQueueDropsAndCountsWithoutBlocking) {
  HeldCollector collector;
  TraceExporterOptions options;
  options.max_queue = 4;
  options.max_batch = 2;
  options.interval = 10ms;
  {
    TraceExporter exporter({}, collector.sender(), "test", options);
    exporter.submit(spans(2));  // a full batch: sent at once, and held there
    collector.wait_entered(1);
    exporter.submit(spans(3));  // queued
    exporter.submit(spans(3));  // one fits, two dropped
    EXPECT_EQ(exporter.dropped(), 2u);
    collector.release();
  }  // the destructor sends the rest
  EXPECT_EQ(collector.entered, 3);
  std::size_t sent = 0;
  for (const auto& body : collector.bodies)
    sent += boost::json::parse(body)
                .at_pointer("/resourceSpans/0/scopeSpans/0/spans")
                .as_array()
                .size();
  EXPECT_EQ(sent, 6u);
}

TEST(TraceExporter, AFailedExportDropsItsBatchAndCountsIt) {
  HeldCollector collector;
  collector.release();
  TraceExporterOptions options;
  options.interval = 10ms;
  TraceExporter exporter({}, collector.sender("connection refused"), "test", options);
  exporter.submit(spans(3));
  exporter.flush();
  EXPECT_EQ(collector.entered, 1);
  EXPECT_EQ(exporter.dropped(), 3u);
  EXPECT_EQ(exporter.exported(), 0u);
  EXPECT_NE(exporter.metrics_text().find("switchyard_trace_spans_dropped_total 3"),
            std::string::npos);
}

// A dead collector costs no encoding and no connection per batch: after a
// failure nothing is taken until the back-off ends; the next batch probes.
TEST(TraceExporter, AfterAFailureItTakesNothingUntilTheBackOffEnds) {
  int sends = 0;  // the exporter's thread only; read after flush()
  bool up = false;
  auto now = std::chrono::steady_clock::time_point{} + 1h;
  TraceExporterOptions options;
  options.retry_min = 100ms;
  options.retry_max = 100ms;
  options.clock = [&] { return now; };
  TraceExporter exporter(
      {},
      [&](const std::string&) -> std::optional<std::string> {
        ++sends;
        if (up) return std::nullopt;
        return std::string("connection refused");
      },
      "test", options);
  EXPECT_TRUE(exporter.accepting());
  exporter.submit(spans(2));
  exporter.flush();
  EXPECT_EQ(sends, 1);
  ASSERT_FALSE(exporter.accepting());
  exporter.submit(spans(3));  // dropped at once, never sent
  exporter.flush();
  EXPECT_EQ(exporter.dropped(), 5u);
  EXPECT_EQ(sends, 1);
  now += 99ms;
  EXPECT_FALSE(exporter.accepting());
  now += 1ms;  // the back-off ended: the next batch is the probe
  ASSERT_TRUE(exporter.accepting());
  up = true;
  exporter.submit(spans(1));
  exporter.flush();
  EXPECT_EQ(exporter.exported(), 1u);
  EXPECT_EQ(sends, 2);
  EXPECT_TRUE(exporter.accepting());
}

TEST(TraceExporter, APartialBatchGoesOutAfterTheInterval) {
  HeldCollector collector;
  collector.release();
  TraceExporterOptions options;
  options.interval = 20ms;
  TraceExporter exporter({}, collector.sender(), "test", options);
  exporter.submit(spans(1));
  collector.wait_entered(1);
  for (int i = 0; i < 500 && exporter.exported() < 1; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(exporter.exported(), 1u);
  EXPECT_EQ(exporter.dropped(), 0u);
}

}  // namespace
}  // namespace switchyard::obs
