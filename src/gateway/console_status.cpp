#include "gateway/console_status.h"

#include "obs/engine_metrics.h"

namespace switchyard::gateway {

void add_console_status(obs::StatusSnapshot& status, const obs::GenerationMeter& generation,
                        const advisor::LiveAdvisor& advisor) {
  const auto now = obs::GenerationMeter::clock::now();
  for (auto& inst : status.instances) {
    inst.tokens_per_second = generation.rate(inst.name, kGenerationWindow, now);
    inst.prefix_cache_hit_ratio =
        advisor.measurement(inst.name, "prefix_cache_hit_rate").value_or(-1);
  }
  for (const auto& f : advisor.findings())
    status.findings.push_back(
        {f.instance, f.finding.check, to_string(f.finding.severity), f.finding.message});
}

std::string engine_metrics_text(const obs::MetricsScraper& scraper) {
  std::vector<obs::EngineScrape> scrapes;
  for (const auto& [name, m] : scraper.latest()) scrapes.push_back({name, m.text});
  return obs::relabel_engine_metrics(scrapes);
}

}  // namespace switchyard::gateway
