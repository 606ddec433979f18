// A small parser for the Prometheus text exposition format (what llama-server
// and vLLM serve on /metrics): sample names, labels and values, # TYPE lines,
// and histograms reassembled from their _bucket/_sum/_count samples.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"

namespace switchyard::advisor {

using Labels = std::vector<std::pair<std::string, std::string>>;

struct Sample {
  std::string name;
  Labels labels;
  double value = 0;

  const std::string* label(std::string_view key) const;
};

// Cumulative buckets as exposed, summed over every label set but `le`.
struct Histogram {
  std::vector<std::pair<double, double>> buckets;  // (upper bound, cumulative count), sorted
  double sum = 0;
  double count = 0;

  std::optional<double> mean() const;
  // Linear interpolation inside the bucket holding the q-th observation, as
  // PromQL's histogram_quantile() does; nullopt without observations. A
  // quantile landing in the +Inf bucket returns the largest finite bound.
  std::optional<double> quantile(double q) const;
};

// What happened between two scrapes of the same histogram.
Histogram histogram_delta(const Histogram& later, const Histogram& earlier);

class MetricsText {
 public:
  // An Error names the first malformed line ("line 12: …").
  static Result<MetricsText> parse(std::string_view text);

  const std::vector<Sample>& samples() const { return samples_; }

  // The sum over every label set of samples named exactly `name` (vLLM labels
  // each series with model_name, and several engines may share one server);
  // nullopt when there is no such sample.
  std::optional<double> sum(std::string_view name) const;
  std::optional<double> max(std::string_view name) const;
  const Sample* first(std::string_view name) const;

  // The # TYPE of a metric family ("counter", "gauge", "histogram", …).
  std::optional<std::string> type(std::string_view family) const;

  // `family`_bucket/_sum/_count reassembled; nullopt without buckets.
  std::optional<Histogram> histogram(std::string_view family) const;

  bool has_prefix(std::string_view prefix) const;

 private:
  std::vector<Sample> samples_;
  std::vector<std::pair<std::string, std::string>> types_;  // family, type
};

}  // namespace switchyard::advisor
