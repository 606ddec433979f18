#include "advisor/prometheus_text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

namespace switchyard::advisor {
namespace {

bool name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool name_char(char c) {
  return name_start(c) || std::isdigit(static_cast<unsigned char>(c));
}

void skip_blanks(std::string_view& s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
}

std::string take_name(std::string_view& s) {
  std::size_t n = 0;
  if (!s.empty() && name_start(s[0])) {
    while (n < s.size() && name_char(s[n])) ++n;
  }
  std::string name(s.substr(0, n));
  s.remove_prefix(n);
  return name;
}

std::optional<double> parse_value(std::string_view token) {
  if (token == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (token == "+Inf" || token == "Inf") return std::numeric_limits<double>::infinity();
  if (token == "-Inf") return -std::numeric_limits<double>::infinity();
  std::string s(token);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

// Parses `{name="value",…}` after the metric name; false on malformed input.
bool parse_labels(std::string_view& s, Labels& labels, std::string& error) {
  s.remove_prefix(1);  // '{'
  while (true) {
    skip_blanks(s);
    if (s.empty()) {
      error = "unterminated label set";
      return false;
    }
    if (s.front() == '}') {
      s.remove_prefix(1);
      return true;
    }
    std::string key = take_name(s);
    skip_blanks(s);
    if (key.empty() || s.empty() || s.front() != '=') {
      error = "expected label name and '='";
      return false;
    }
    s.remove_prefix(1);
    skip_blanks(s);
    if (s.empty() || s.front() != '"') {
      error = "expected '\"' to open the value of label " + key;
      return false;
    }
    s.remove_prefix(1);
    std::string value;
    bool closed = false;
    while (!s.empty()) {
      char c = s.front();
      s.remove_prefix(1);
      if (c == '"') {
        closed = true;
        break;
      }
      if (c == '\\' && !s.empty()) {
        char e = s.front();
        s.remove_prefix(1);
        value += e == 'n' ? '\n' : e;  // \\ and \" stand for themselves
        continue;
      }
      value += c;
    }
    if (!closed) {
      error = "unterminated value of label " + key;
      return false;
    }
    labels.emplace_back(std::move(key), std::move(value));
    skip_blanks(s);
    if (!s.empty() && s.front() == ',') s.remove_prefix(1);
  }
}

}  // namespace

const std::string* Sample::label(std::string_view key) const {
  for (const auto& [k, v] : labels) {
    if (k == key) return &v;
  }
  return nullptr;
}

std::optional<double> Histogram::mean() const {
  if (count <= 0) return std::nullopt;
  return sum / count;
}

std::optional<double> Histogram::quantile(double q) const {
  if (buckets.empty() || count <= 0) return std::nullopt;
  const double rank = q * buckets.back().second;
  double lower_bound = 0;
  double lower_count = 0;
  for (const auto& [bound, cumulative] : buckets) {
    if (cumulative >= rank) {
      if (std::isinf(bound)) return lower_bound;
      if (cumulative == lower_count) return bound;
      return lower_bound +
             (bound - lower_bound) * (rank - lower_count) / (cumulative - lower_count);
    }
    lower_bound = bound;
    lower_count = cumulative;
  }
  return lower_bound;
}

Histogram histogram_delta(const Histogram& later, const Histogram& earlier) {
  Histogram d = later;
  d.sum -= earlier.sum;
  d.count -= earlier.count;
  for (auto& [bound, cumulative] : d.buckets) {
    for (const auto& [b, c] : earlier.buckets) {
      if (b == bound) cumulative -= c;
    }
  }
  return d;
}

Result<MetricsText> MetricsText::parse(std::string_view text) {
  MetricsText metrics;
  int line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    skip_blanks(line);
    if (line.empty()) continue;

    if (line.front() == '#') {
      line.remove_prefix(1);
      skip_blanks(line);
      if (line.substr(0, 5) == "TYPE ") {
        line.remove_prefix(5);
        skip_blanks(line);
        std::string family = take_name(line);
        skip_blanks(line);
        metrics.types_.emplace_back(std::move(family), std::string(line));
      }
      continue;  // HELP and other comments carry nothing doctor needs
    }

    const std::string where = "line " + std::to_string(line_number) + ": ";
    Sample sample;
    sample.name = take_name(line);
    if (sample.name.empty()) return Error{where + "expected a metric name"};
    if (!line.empty() && line.front() == '{') {
      std::string error;
      if (!parse_labels(line, sample.labels, error)) return Error{where + error};
    }
    skip_blanks(line);
    const std::size_t end = line.find_first_of(" \t");
    auto value = parse_value(line.substr(0, end));
    if (!value) return Error{where + "bad value for " + sample.name};
    sample.value = *value;
    metrics.samples_.push_back(std::move(sample));
  }
  return metrics;
}

std::optional<double> MetricsText::sum(std::string_view name) const {
  std::optional<double> total;
  for (const auto& s : samples_) {
    if (s.name == name) total = total.value_or(0) + s.value;
  }
  return total;
}

std::optional<double> MetricsText::max(std::string_view name) const {
  std::optional<double> best;
  for (const auto& s : samples_) {
    if (s.name == name) best = std::max(best.value_or(s.value), s.value);
  }
  return best;
}

const Sample* MetricsText::first(std::string_view name) const {
  for (const auto& s : samples_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::optional<std::string> MetricsText::type(std::string_view family) const {
  for (const auto& [f, t] : types_) {
    if (f == family) return t;
  }
  return std::nullopt;
}

std::optional<Histogram> MetricsText::histogram(std::string_view family) const {
  const std::string bucket = std::string(family) + "_bucket";
  const std::string sum_name = std::string(family) + "_sum";
  const std::string count_name = std::string(family) + "_count";
  std::map<double, double> buckets;
  Histogram h;
  for (const auto& s : samples_) {
    if (s.name == bucket) {
      const std::string* le = s.label("le");
      if (!le) continue;
      auto bound = parse_value(*le);
      if (bound) buckets[*bound] += s.value;
    } else if (s.name == sum_name) {
      h.sum += s.value;
    } else if (s.name == count_name) {
      h.count += s.value;
    }
  }
  if (buckets.empty()) return std::nullopt;
  h.buckets.assign(buckets.begin(), buckets.end());
  return h;
}

bool MetricsText::has_prefix(std::string_view prefix) const {
  return std::any_of(samples_.begin(), samples_.end(),
                     [&](const Sample& s) { return s.name.rfind(prefix, 0) == 0; });
}

}  // namespace switchyard::advisor
