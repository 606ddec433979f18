// The engines' own series, re-served on the gateway's /metrics: llama.cpp's
// llamacpp:* and vLLM's vllm:* under their own names with a
// switchyard_instance label added, so existing engine dashboards work on the
// whole fleet through one scrape target.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace switchyard::obs {

struct EngineScrape {
  std::string instance;   // the gateway's instance name
  std::string_view text;  // the engine's /metrics body (Prometheus text format)
};

// One exposition text of every scrape's llamacpp:* and vllm:* families: each
// family's # HELP and # TYPE once (from the first scrape that has them), then
// its samples from every scrape, each with switchyard_instance="<instance>"
// first among its labels. Other families, comments and malformed lines are
// left out; timestamps are dropped (the gateway serves what it has now).
std::string relabel_engine_metrics(const std::vector<EngineScrape>& scrapes);

// `value` escaped for a Prometheus label value (backslash, quote, newline).
std::string escape_label_value(std::string_view value);

}  // namespace switchyard::obs
