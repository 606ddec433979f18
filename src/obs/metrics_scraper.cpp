#include "obs/metrics_scraper.h"

#include <boost/asio.hpp>

#include <spdlog/spdlog.h>

#include "http/upstream.h"

namespace switchyard::obs {

namespace net = boost::asio;
using namespace std::chrono_literals;

namespace {

// Engines' /metrics are a few hundred KB at most (vLLM's histograms per model).
constexpr std::size_t kMaxMetricsBody = 8u << 20;

}  // namespace

struct MetricsScraper::State : std::enable_shared_from_this<State> {
  State(net::any_io_executor e, const InstanceTable& i, std::chrono::milliseconds every)
      : executor(e), instances(i), interval(every), timer(e) {}

  net::awaitable<void> run();
  net::awaitable<void> scrape(const fleet::Instance& inst);
  void forget(const std::string& name) {
    if (latest.erase(name) && forgotten) forgotten(name);
  }

  net::any_io_executor executor;
  const InstanceTable& instances;
  const std::chrono::milliseconds interval;
  net::steady_timer timer;
  bool stopped = false;
  std::function<void(const fleet::Instance&, const EngineMetrics&)> scraped;
  std::function<void(const std::string&)> forgotten;
  std::map<std::string, EngineMetrics> latest;
  // A pool per instance index (indexes are never reused): scrapes fail fast,
  // and one connection is kept for the next interval.
  std::map<std::size_t, std::unique_ptr<http::UpstreamPool>> pools;
};

net::awaitable<void> MetricsScraper::State::scrape(const fleet::Instance& inst) {
  auto& pool = pools[inst.index];
  if (!pool)
    pool = std::make_unique<http::UpstreamPool>(executor, *inst.url,
                                                http::UpstreamOptions{1000ms, 2000ms, 2000ms, 1});
  http::UpstreamCall call(*pool);
  http::UpstreamRequest req;
  req.method = "GET";
  req.target = "/metrics";
  if (inst.config.api_key) req.headers.add("Authorization", "Bearer " + *inst.config.api_key);
  auto head = co_await call.send(req);
  // Stopped meanwhile: the instance table may be gone.
  if (stopped) co_return;
  if (!head) co_return forget(inst.name());
  auto body = co_await call.read_all(kMaxMetricsBody);
  if (stopped) co_return;
  if (!body || head->status != 200) co_return forget(inst.name());
  auto& m = latest[inst.name()];
  m.text = std::move(*body);
  m.at = std::chrono::steady_clock::now();
  if (scraped) scraped(inst, m);
}

net::awaitable<void> MetricsScraper::State::run() {
  auto self = shared_from_this();
  while (!stopped) {
    // One instance after another: a scrape is a small GET, and engines are
    // few. A reload may add instances meanwhile, so walk by index.
    std::map<std::string, bool> ready;
    for (std::size_t i = 0; i < instances.size() && !stopped; ++i) {
      const fleet::Instance& inst = *instances[i];
      const bool live = inst.state == fleet::InstanceState::ready && inst.url.has_value();
      // A removed copy never hides the current one under the same name.
      if (inst.state == fleet::InstanceState::removed ||
          inst.state == fleet::InstanceState::stopped)
        continue;
      ready[inst.name()] = live;
      if (live) co_await scrape(inst);
    }
    if (stopped) break;
    std::vector<std::string> gone;
    for (const auto& [name, m] : latest)
      if (auto it = ready.find(name); it == ready.end() || !it->second) gone.push_back(name);
    for (const auto& name : gone) forget(name);
    timer.expires_after(interval);
    co_await timer.async_wait(net::as_tuple(net::use_awaitable));
  }
}

MetricsScraper::MetricsScraper(net::any_io_executor executor, const InstanceTable& instances,
                               std::chrono::milliseconds interval)
    : state_(std::make_shared<State>(executor, instances, interval)) {}

MetricsScraper::~MetricsScraper() {
  stop();
}

void MetricsScraper::on_scrape(
    std::function<void(const fleet::Instance&, const EngineMetrics&)> callback) {
  state_->scraped = std::move(callback);
}

void MetricsScraper::on_forget(std::function<void(const std::string&)> callback) {
  state_->forgotten = std::move(callback);
}

void MetricsScraper::start() {
  net::co_spawn(state_->executor, state_->run(), net::detached);
}

void MetricsScraper::stop() {
  state_->stopped = true;
  state_->scraped = nullptr;
  state_->forgotten = nullptr;
  state_->timer.cancel();
}

const std::map<std::string, EngineMetrics>& MetricsScraper::latest() const {
  return state_->latest;
}

}  // namespace switchyard::obs
