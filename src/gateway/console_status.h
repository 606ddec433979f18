// What the operator's console adds to the status snapshot and /metrics: the
// measured generation rate, the engines' prefix-cache hit ratios and the
// live advisor's findings; and the engines' own series, relabeled.
#pragma once

#include <chrono>
#include <string>

#include "advisor/live_advisor.h"
#include "obs/generation_meter.h"
#include "obs/metrics_scraper.h"
#include "obs/status.h"

namespace switchyard::gateway {

// The window of InstanceStatus::tokens_per_second: long enough to smooth a
// stream's bursts, short enough that a stalled engine shows within seconds.
constexpr std::chrono::seconds kGenerationWindow{10};

void add_console_status(obs::StatusSnapshot& status, const obs::GenerationMeter& generation,
                        const advisor::LiveAdvisor& advisor);

// The last scrape of every ready instance as re-exported series
// (obs/engine_metrics.h).
std::string engine_metrics_text(const obs::MetricsScraper& scraper);

}  // namespace switchyard::gateway
