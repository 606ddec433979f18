#include "gateway/routing/engine_kv.h"

#include <algorithm>
#include <charconv>
#include <string>

#include "advisor/prometheus_text.h"

namespace switchyard::gateway {

namespace {

std::optional<long> whole_number(const std::string* text) {
  if (!text) return std::nullopt;
  long v = 0;
  const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
  if (ec != std::errc() || end != text->data() + text->size() || v <= 0) return std::nullopt;
  return v;
}

}  // namespace

std::optional<long> vllm_kv_pool_tokens(std::string_view metrics_text) {
  constexpr std::string_view kName = "vllm:cache_config_info";
  // Parse only the series' line: the scrape is large, and re-parsed by the
  // advisor anyway.
  std::size_t at = 0;
  while ((at = metrics_text.find(kName, at)) != std::string_view::npos) {
    const bool line_start = at == 0 || metrics_text[at - 1] == '\n';
    const std::size_t end = std::min(metrics_text.find('\n', at), metrics_text.size());
    if (line_start) {
      auto parsed = advisor::MetricsText::parse(metrics_text.substr(at, end - at));
      if (!parsed) return std::nullopt;
      const advisor::Sample* info = parsed->first(kName);
      if (!info) return std::nullopt;
      const auto blocks = whole_number(info->label("num_gpu_blocks"));
      const auto block_size = whole_number(info->label("block_size"));
      if (!blocks || !block_size) return std::nullopt;
      return *blocks * *block_size;
    }
    at = end;
  }
  return std::nullopt;
}

}  // namespace switchyard::gateway
