#include "sim/timing_model.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace switchyard::sim {

std::optional<Error> validate(const TimingOptions& o) {
  if (o.decode_curve.empty()) return Error{"decode_curve: needs at least one point"};
  for (std::size_t i = 0; i < o.decode_curve.size(); ++i) {
    const auto& p = o.decode_curve[i];
    if (p.batch_tokens < 1 || !(p.seconds >= 0) || !std::isfinite(p.seconds))
      return Error{fmt::format("decode_curve: point {} needs batch >= 1 and a time >= 0", i + 1)};
    if (i > 0 && p.batch_tokens <= o.decode_curve[i - 1].batch_tokens)
      return Error{"decode_curve: batch sizes must increase"};
  }
  if (!(o.prefill_tokens_per_second > 0)) return Error{"prefill_tokens_per_second: must be > 0"};
  if (!(o.prefill_half_depth >= 0)) return Error{"prefill_half_depth: must be >= 0"};
  if (o.spec_draft_tokens < 0 || o.spec_draft_tokens > 16)
    return Error{"spec_draft_tokens: must be 0..16"};
  if (!(o.spec_acceptance >= 0 && o.spec_acceptance < 1))
    return Error{"spec_acceptance: must be in [0, 1)"};
  return std::nullopt;
}

Result<std::vector<DecodePoint>> parse_decode_curve(std::string_view text) {
  std::vector<DecodePoint> curve;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const auto colon = item.find(':');
    DecodePoint p;
    double ms = -1;
    const bool ok =
        colon != std::string_view::npos &&
        std::from_chars(item.data(), item.data() + colon, p.batch_tokens).ec == std::errc() &&
        std::from_chars(item.data() + colon + 1, item.data() + item.size(), ms).ec == std::errc();
    if (!ok) return Error{fmt::format("decode curve: '{}' is not BATCH:MILLISECONDS", item)};
    p.seconds = ms / 1e3;
    curve.push_back(p);
  }
  TimingOptions check;
  check.decode_curve = curve;
  if (auto error = validate(check)) return *error;
  return curve;
}

std::string format_decode_curve(const std::vector<DecodePoint>& curve) {
  std::string out;
  for (const auto& p : curve)
    out += fmt::format("{}{}:{:g}", out.empty() ? "" : ",", p.batch_tokens, p.seconds * 1e3);
  return out;
}

TimingModel::TimingModel(TimingOptions options) : options_(std::move(options)) {}

double TimingModel::decode_seconds(int batch_tokens) const {
  if (batch_tokens <= 0) return 0;
  const auto& c = options_.decode_curve;
  if (c.size() == 1 || batch_tokens <= c.front().batch_tokens) return c.front().seconds;
  // The segment that holds batch_tokens, or the last one to extrapolate.
  std::size_t i = 1;
  while (i + 1 < c.size() && c[i].batch_tokens < batch_tokens) ++i;
  const auto& a = c[i - 1];
  const auto& b = c[i];
  const double slope = (b.seconds - a.seconds) / (b.batch_tokens - a.batch_tokens);
  return std::max(0.0, a.seconds + slope * (batch_tokens - a.batch_tokens));
}

double TimingModel::prefill_seconds(int tokens, int depth) const {
  if (tokens <= 0 || std::isinf(options_.prefill_tokens_per_second)) return 0;
  double work = tokens;  // in depth-0 token times
  if (options_.prefill_half_depth > 0) {
    // The integral of (1 + d / h) over [depth, depth + tokens).
    const double d0 = depth;
    const double d1 = d0 + tokens;
    work += (d1 * d1 - d0 * d0) / (2 * options_.prefill_half_depth);
  }
  return work / options_.prefill_tokens_per_second;
}

double TimingModel::expected_tokens_per_step() const {
  const int k = options_.spec_draft_tokens;
  const double p = options_.spec_acceptance;
  if (k == 0 || p == 0) return 1;
  return (1 - std::pow(p, k + 1)) / (1 - p);
}

}  // namespace switchyard::sim
