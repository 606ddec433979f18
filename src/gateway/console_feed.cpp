#include "gateway/console_feed.h"

#include <algorithm>
#include <cmath>

namespace switchyard::gateway {

namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The nearest-rank quantile of sorted values.
double quantile(const std::vector<double>& sorted, double q) {
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

}  // namespace

ConsoleFeed::ConsoleFeed(boost::asio::any_io_executor executor, std::function<Gauges()> gauges)
    : gauges_(std::move(gauges)), timer_(executor) {
  arm();
}

ConsoleFeed::~ConsoleFeed() {
  timer_.cancel();
}

void ConsoleFeed::arm() {
  timer_.expires_after(std::chrono::seconds(1));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    // Cancelled only by the destructor: `this` is gone then.
    if (ec) return;
    sample();
    arm();
  });
}

void ConsoleFeed::sample() {
  ChartPoint p = pending_;
  p.t = std::floor(unix_now());
  const auto g = gauges_();
  p.tokens_per_second = g.tokens_per_second;
  p.queued = g.queued;
  if (!ttfts_.empty()) {
    std::sort(ttfts_.begin(), ttfts_.end());
    p.ttft_p50 = quantile(ttfts_, 0.5);
    p.ttft_p99 = quantile(ttfts_, 0.99);
  }
  history_.push_back(p);
  if (history_.size() > kHistoryPoints) history_.pop_front();
  pending_ = ChartPoint{};
  ttfts_.clear();
}

void ConsoleFeed::changed() {
  for (auto* tick : streams_) tick->cancel();
}

void ConsoleFeed::begin(Running& entry, const RequestRecord& record, const std::string& key,
                        const std::string& session) {
  entry.record = &record;
  entry.key = &key;
  entry.session = &session;
  running_.push_back(entry);
}

void ConsoleFeed::finish(Running& entry) {
  entry.unlink();
  const RequestRecord& record = *entry.record;
  FinishedRequest& f = recent_[recent_next_];
  f.id.assign(record.id);
  f.key.assign(*entry.key);
  f.session.assign(*entry.session);
  f.model.assign(record.model);
  f.instance.assign(record.instance);
  f.outcome.assign(to_string(record.outcome()));
  f.status = record.logged_status();
  f.ttft = record.ttfb;
  f.duration = record.seconds_since_start();
  f.completion_tokens = record.usage ? record.usage->completion_tokens : -1;
  f.at = unix_now();
  recent_next_ = (recent_next_ + 1) % kRecent;
  recent_count_ = std::min(recent_count_ + 1, kRecent);
  if (record.ttfb >= 0) ttfts_.push_back(record.ttfb);
  switch (record.outcome()) {
    case RequestRecord::Outcome::ok:
      ++pending_.ok;
      break;
    case RequestRecord::Outcome::error:
    case RequestRecord::Outcome::shutting_down:  // the chart's errors: not the engines'
      ++pending_.error;
      break;
    case RequestRecord::Outcome::upstream_failed:
      ++pending_.upstream_failed;
      break;
    case RequestRecord::Outcome::client_closed:
      ++pending_.client_closed;
      break;
  }
}

}  // namespace switchyard::gateway
