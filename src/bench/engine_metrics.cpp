#include "bench/engine_metrics.h"

#include <algorithm>
#include <charconv>

#include "http/fetch.h"

namespace switchyard::bench {

namespace {

// The sum over every label set of the samples named exactly `name`.
std::optional<double> sample_sum(std::string_view text, std::string_view name) {
  std::optional<double> sum;
  std::size_t at = 0;
  while (at < text.size()) {
    auto end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (!line.starts_with(name) || line.size() == name.size()) continue;
    const char next = line[name.size()];
    if (next != '{' && next != ' ') continue;
    // The value follows the labels (which may hold spaces inside quotes).
    const auto labels_end = next == '{' ? line.rfind('}') : name.size();
    if (labels_end == std::string_view::npos) continue;
    std::string_view rest = line.substr(labels_end + 1);
    rest.remove_prefix(std::min(rest.size(), rest.find_first_not_of(' ')));
    double v = 0;
    const auto value_end = rest.find(' ');  // a timestamp may follow
    const auto number = rest.substr(0, value_end);
    if (auto [p, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
        ec != std::errc() || p != number.data() + number.size())
      continue;
    sum = sum.value_or(0) + v;
  }
  return sum;
}

std::optional<double> delta(const std::optional<double>& after,
                            const std::optional<double>& before) {
  if (!after || !before || *after < *before) return std::nullopt;
  return *after - *before;
}

}  // namespace

std::optional<EngineCounters> parse_vllm_metrics(std::string_view text) {
  if (text.find("\nvllm:") == std::string_view::npos && !text.starts_with("vllm:"))
    return std::nullopt;
  EngineCounters c;
  c.generation_tokens = sample_sum(text, "vllm:generation_tokens_total");
  for (std::string_view family :
       {"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"}) {
    const std::string base(family);
    c.itl_sum_s = sample_sum(text, base + "_sum");
    c.itl_count = sample_sum(text, base + "_count");
    if (c.itl_sum_s && c.itl_count) break;
  }
  return c;
}

std::optional<EngineCounters> scrape_vllm_metrics(const std::string& base_url,
                                                  const HeaderList& headers) {
  http::FetchRequest request;
  request.url = base_url + "/metrics";
  request.headers = headers;
  auto response = http::fetch(request);
  if (!response || response->status != 200) return std::nullopt;
  return parse_vllm_metrics(response->body);
}

void apply_engine_counters(StepReport& step, const std::vector<RequestRecord>& records,
                           const EngineCounters& before, const EngineCounters& after) {
  if (step.self_reported_tokens_per_s) return;  // per-request timings say more
  double rate_sum = 0;
  long rates = 0;
  long warmup_tokens = 0;
  for (const auto& r : records) {
    if (r.warmup) {
      warmup_tokens += r.output_tokens();
      continue;
    }
    if (!r.ok() || r.error == "interrupted") continue;
    if (const double t = r.tpot_ms(); t > 0) {
      rate_sum += 1000.0 / t;
      ++rates;
    }
  }
  const auto itl_sum = delta(after.itl_sum_s, before.itl_sum_s);
  const auto itl_count = delta(after.itl_count, before.itl_count);
  if (rates > 0 && itl_sum && itl_count && *itl_sum > 0 && *itl_count > 0) {
    const double claimed = *itl_count / *itl_sum;
    step.self_report_ratio = claimed / (rate_sum / static_cast<double>(rates));
    step.inflated = *step.self_report_ratio > kInflatedRatio;
  }
  if (const auto tokens = delta(after.generation_tokens, before.generation_tokens);
      tokens && step.wall_s > 0)
    step.self_reported_tokens_per_s =
        std::max(0.0, *tokens - static_cast<double>(warmup_tokens)) / step.wall_s;
}

}  // namespace switchyard::bench
