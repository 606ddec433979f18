#include "obs/trace_exporter.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace switchyard::obs {

TraceExporter::TraceExporter(SpanSource source, Send send, std::string where,
                             TraceExporterOptions options)
    : source_(std::move(source)),
      send_(std::move(send)),
      where_(std::move(where)),
      options_(options),
      thread_([this] { run(); }) {}

TraceExporter::~TraceExporter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

std::int64_t TraceExporter::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(options_.clock().time_since_epoch())
      .count();
}

bool TraceExporter::accepting() const {
  const auto until = resume_at_.load(std::memory_order_relaxed);
  return until == 0 || now_ns() >= until;
}

void TraceExporter::flush() {
  std::unique_lock lock(mutex_);
  const auto drained = [this] { return queue_.empty() && !sending_; };
  if (drained()) return;
  ++flushing_;
  wake_.notify_one();
  drained_.wait(lock, drained);
  --flushing_;
}

void TraceExporter::submit(std::vector<Span> spans) {
  if (!accepting()) {
    dropped_ += spans.size();
    return;
  }
  std::size_t dropped = 0;
  bool full_batch = false;
  {
    std::lock_guard lock(mutex_);
    for (auto& s : spans) {
      if (queue_.size() >= options_.max_queue) {
        ++dropped;
        continue;
      }
      queue_.push_back(std::move(s));
    }
    full_batch = queue_.size() >= options_.max_batch;
  }
  dropped_ += dropped;
  if (full_batch) wake_.notify_one();
}

void TraceExporter::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait_for(lock, options_.interval, [this] {
      return stopping_ || queue_.size() >= options_.max_batch || (flushing_ > 0 && !queue_.empty());
    });
    while (!queue_.empty()) {
      const std::size_t n = std::min(queue_.size(), options_.max_batch);
      std::vector<Span> batch(std::make_move_iterator(queue_.begin()),
                              std::make_move_iterator(queue_.begin() + n));
      queue_.erase(queue_.begin(), queue_.begin() + n);
      sending_ = true;
      lock.unlock();  // the queue takes spans while this one is sent
      if (accepting())
        export_batch(std::move(batch));
      else
        dropped_ += batch.size();  // queued before the failure: no second try
      lock.lock();
      sending_ = false;
      if (stopping_ && failing_) {
        // Shutting down with the collector failing: one timeout, not one per batch.
        dropped_ += queue_.size();
        queue_.clear();
      }
      if (!stopping_ && flushing_ == 0 && queue_.size() < options_.max_batch) break;
    }
    if (queue_.empty()) drained_.notify_all();
    if (stopping_ && queue_.empty()) return;
  }
}

void TraceExporter::export_batch(std::vector<Span> batch) {
  const auto failure = send_(encode_otlp_json(source_, batch));
  if (!failure) {
    exported_ += batch.size();
    backoff_ = std::chrono::milliseconds(0);
    resume_at_ = 0;
    if (std::exchange(failing_, false)) spdlog::info("tracing: exporting to {} again", where_);
    return;
  }
  dropped_ += batch.size();
  backoff_ = failing_ ? std::min(backoff_ * 2, options_.retry_max) : options_.retry_min;
  resume_at_ = now_ns() + std::chrono::nanoseconds(backoff_).count();
  if (!std::exchange(failing_, true))
    spdlog::warn(
        "tracing: export to {} failed: {}; spans are dropped and requests go untraced until it "
        "succeeds, tried again after {} ms doubling to {} s (switchyard_trace_spans_dropped_total)",
        where_, *failure, backoff_.count(),
        std::chrono::duration_cast<std::chrono::seconds>(options_.retry_max).count());
}

std::string TraceExporter::metrics_text() const {
  return fmt::format(
      "# HELP switchyard_trace_spans_exported_total Spans the collector accepted.\n"
      "# TYPE switchyard_trace_spans_exported_total counter\n"
      "switchyard_trace_spans_exported_total {}\n"
      "# HELP switchyard_trace_spans_dropped_total Spans dropped: the export queue was full or "
      "the collector failed.\n"
      "# TYPE switchyard_trace_spans_dropped_total counter\n"
      "switchyard_trace_spans_dropped_total {}\n"
      "# HELP switchyard_trace_requests_untraced_total Requests not traced while the exporter "
      "backed off from a failing collector.\n"
      "# TYPE switchyard_trace_requests_untraced_total counter\n"
      "switchyard_trace_requests_untraced_total {}\n",
      exported_.load(), dropped_.load(), untraced_.load());
}

}  // namespace switchyard::obs
