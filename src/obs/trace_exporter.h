// Sends finished spans to an OTLP/HTTP collector from a thread of its own,
// in batches, so that no request waits on the collector: the gateway only
// appends to a bounded queue. When the queue is full (the collector slow or
// down) new spans are dropped and counted; a failed export drops its batch.
// The first failure after a success is logged; the rest only counted.
// After a failure the exporter backs off (retry_min doubling to retry_max):
// meanwhile it takes nothing (accepting() is false, so the gateway does not
// build spans), and the next batch after it is the probe. A dead collector
// then costs the gateway one clock read a request, not an encoding and a
// refused connection per batch (which halved its throughput on 2 cores).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "obs/otlp_json.h"
#include "obs/span.h"

namespace switchyard::obs {

struct TraceExporterOptions {
  std::size_t max_queue = 2048;               // spans waiting; more are dropped
  std::size_t max_batch = 512;                // spans per export request
  std::chrono::milliseconds interval{1000};   // a partial batch waits at most this long
  std::chrono::milliseconds retry_min{1000};  // the back-off after a failed export
  std::chrono::milliseconds retry_max{30000};
  // The back-off's clock (tests give a fake one).
  std::function<std::chrono::steady_clock::time_point()> clock = std::chrono::steady_clock::now;
};

class TraceExporter {
 public:
  // Posts one OTLP/JSON body; returns what failed, or nullopt. Runs on the
  // exporter's thread and may block (bounded by its own timeout).
  using Send = std::function<std::optional<std::string>(const std::string& body)>;

  // `where`: the collector, for the log line.
  TraceExporter(SpanSource source, Send send, std::string where, TraceExporterOptions options = {});
  // Sends what is queued (one attempt per batch), then stops the thread.
  ~TraceExporter();
  TraceExporter(const TraceExporter&) = delete;
  TraceExporter& operator=(const TraceExporter&) = delete;

  // Queues one request's spans; never blocks on I/O. Spans past the
  // queue's bound are dropped (counted).
  void submit(std::vector<Span> spans);
  // Sends what is queued now, without waiting for a full batch or the
  // interval, and returns once it is exported or dropped.
  void flush();

  // False while backing off after a failed export: spans would be dropped.
  bool accepting() const;
  // A request left untraced because the exporter was not accepting.
  void untraced() { ++untraced_; }

  std::uint64_t exported() const { return exported_; }
  std::uint64_t dropped() const { return dropped_; }
  // The counters in Prometheus text (switchyard_trace_spans_*_total).
  std::string metrics_text() const;

 private:
  void run();
  void export_batch(std::vector<Span> batch);
  std::int64_t now_ns() const;

  const SpanSource source_;
  const Send send_;
  const std::string where_;
  const TraceExporterOptions options_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable drained_;  // the queue empty, no batch out
  std::deque<Span> queue_;
  bool stopping_ = false;
  int flushing_ = 0;                      // flush() calls waiting
  bool sending_ = false;                  // a batch is out of the queue, being sent
  bool failing_ = false;                  // exporter thread only: the last export failed
  std::chrono::milliseconds backoff_{0};  // exporter thread only
  // Nanoseconds of options_.clock until which nothing is taken (0: taking).
  std::atomic<std::int64_t> resume_at_{0};
  std::atomic<std::uint64_t> exported_{0}, dropped_{0}, untraced_{0};
  std::thread thread_;  // last: starts once the rest is set
};

}  // namespace switchyard::obs
