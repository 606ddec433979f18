#include "gateway/engine_watch.h"

#include "gateway/routing/engine_kv.h"

namespace switchyard::gateway {

EngineWatch::EngineWatch(boost::asio::any_io_executor executor, const InstanceTable& instances,
                         std::chrono::milliseconds interval, Router& router)
    : scraper_(executor, instances, interval) {
  scraper_.on_scrape([this, &router](const fleet::Instance& inst, const obs::EngineMetrics& m) {
    advisor_.observe(inst.name(), m.text, m.at, m.idle_at);
    if (const auto kv = vllm_kv_pool_tokens(m.text)) router.set_kv_tokens(inst.index, *kv);
  });
  scraper_.on_forget([this](const std::string& name) { advisor_.forget(name); });
  scraper_.on_work([&router](std::size_t index) {
    return obs::EngineWork{router.in_flight(index), router.started(index)};
  });
  scraper_.start();
}

}  // namespace switchyard::gateway
