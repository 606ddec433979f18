#include "obs/metrics_scraper.h"

#include <boost/asio.hpp>

#include <optional>
#include <utility>

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
  // Whether the instance worked since its last scrape (a new engine process
  // has never been scraped).
  bool due(const fleet::Instance& inst);
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
  std::function<EngineWork(std::size_t)> work;
  struct Seen {
    std::uint64_t generation = 0;
    EngineWork work;
    std::optional<std::chrono::steady_clock::time_point> idle_at;  // EngineMetrics::idle_at
    int scrapes = 0;                                               // since its generation changed
  };
  std::map<std::size_t, Seen> seen;  // by instance index, at its last scrape
  // A pool per instance index (indexes are never reused): scrapes fail fast,
  // and one connection is kept for the next interval.
  std::map<std::size_t, std::unique_ptr<http::UpstreamPool>> pools;
};

bool MetricsScraper::State::due(const fleet::Instance& inst) {
  // Asleep by its own word, it would wake for the scrape.
  const bool awake = inst.engine_sleep == fleet::Instance::EngineSleep::awake;
  if (!work) return awake;
  const EngineWork now = work(inst.index);
  auto [it, first] = seen.try_emplace(inst.index);
  Seen& s = it->second;
  const bool same_engine = !first && s.generation == inst.generation;
  // Two scrapes of a new engine (or one that slept) whatever it does: one
  // window for the advisor.
  const bool idle = same_engine && s.scrapes >= 2 && now.in_flight == 0 && s.work.in_flight == 0 &&
                    now.started == s.work.started;
  if (!awake || idle) {
    s.idle_at = std::chrono::steady_clock::now();
    return false;
  }
  s = Seen{inst.generation, now, s.idle_at, same_engine ? s.scrapes + 1 : 1};
  return true;
}

net::awaitable<void> MetricsScraper::State::scrape(const fleet::Instance& inst) {
  std::optional<std::chrono::steady_clock::time_point> idle_at;
  if (auto it = seen.find(inst.index); it != seen.end())
    idle_at = std::exchange(it->second.idle_at, {});
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
  m.idle_at = idle_at;
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
      if (!live) continue;
      if (due(inst)) co_await scrape(inst);
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

void MetricsScraper::on_work(std::function<EngineWork(std::size_t)> work) {
  state_->work = std::move(work);
}

void MetricsScraper::start() {
  net::co_spawn(state_->executor, state_->run(), net::detached);
}

void MetricsScraper::stop() {
  state_->stopped = true;
  state_->scraped = nullptr;
  state_->forgotten = nullptr;
  state_->work = nullptr;
  state_->timer.cancel();
}

const std::map<std::string, EngineMetrics>& MetricsScraper::latest() const {
  return state_->latest;
}

}  // namespace switchyard::obs
