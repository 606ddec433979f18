#include "obs/engine_metrics.h"

#include <map>

namespace switchyard::obs {

namespace {

bool re_exported(std::string_view name) {
  return name.starts_with("llamacpp:") || name.starts_with("vllm:");
}

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == ':';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

struct Family {
  std::string help;  // whole "# HELP ..." line, or empty
  std::string type;  // whole "# TYPE ..." line, or empty
  std::string samples;
};

// The family a sample belongs to: the # TYPE'd family it extends
// (name_bucket, name_sum, name_count, name_total of a declared name), else
// its own name.
std::string_view family_of(std::string_view sample, const std::map<std::string, Family>& known) {
  for (std::string_view suffix : {"_bucket", "_sum", "_count", "_total", "_created"}) {
    if (sample.size() > suffix.size() && sample.ends_with(suffix)) {
      const auto base = sample.substr(0, sample.size() - suffix.size());
      if (auto it = known.find(std::string(base)); it != known.end() && !it->second.type.empty())
        return base;
    }
  }
  return sample;
}

// Appends `line` (one sample) to `out` with the instance label added; false
// when the line is not a well-formed sample.
bool add_sample(std::string_view line, std::string_view name, const std::string& label,
                std::string& out) {
  std::string_view rest = line.substr(name.size());
  std::string labels;
  if (!rest.empty() && rest.front() == '{') {
    // The closing brace is the first one outside a quoted value.
    bool quoted = false;
    std::size_t close = std::string_view::npos;
    for (std::size_t i = 1; i < rest.size(); ++i) {
      if (quoted && rest[i] == '\\') {
        ++i;
      } else if (rest[i] == '"') {
        quoted = !quoted;
      } else if (!quoted && rest[i] == '}') {
        close = i;
        break;
      }
    }
    if (close == std::string_view::npos) return false;
    labels = trim(rest.substr(1, close - 1));
    rest = rest.substr(close + 1);
  }
  rest = trim(rest);
  if (rest.empty()) return false;
  const auto value = rest.substr(0, rest.find_first_of(" \t"));
  out.append(name);
  out += '{';
  out += label;
  if (!labels.empty() && labels != ",") {
    out += ',';
    out.append(labels);
    if (out.back() == ',') out.pop_back();
  }
  out += "} ";
  out.append(value);
  out += '\n';
  return true;
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string relabel_engine_metrics(const std::vector<EngineScrape>& scrapes) {
  std::map<std::string, Family> families;
  std::vector<std::string> order;  // families as first seen
  const auto family = [&](std::string_view name) -> Family& {
    auto [it, fresh] = families.try_emplace(std::string(name));
    if (fresh) order.push_back(it->first);
    return it->second;
  };
  for (const auto& scrape : scrapes) {
    const std::string label = "switchyard_instance=\"" + escape_label_value(scrape.instance) + "\"";
    std::string_view text = scrape.text;
    while (!text.empty()) {
      const auto eol = text.find('\n');
      const std::string_view line = trim(text.substr(0, eol));
      text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
      if (line.empty()) continue;
      if (line.front() == '#') {
        // "# HELP name text" and "# TYPE name type"; other comments are dropped.
        const bool help = line.starts_with("# HELP ");
        if (!help && !line.starts_with("# TYPE ")) continue;
        const auto rest = line.substr(7);
        const auto name = rest.substr(0, rest.find(' '));
        if (!re_exported(name)) continue;
        auto& f = family(name);
        auto& slot = help ? f.help : f.type;
        if (slot.empty()) slot = line;
        continue;
      }
      std::size_t n = 0;
      while (n < line.size() && name_char(line[n])) ++n;
      const auto name = line.substr(0, n);
      if (n == 0 || !re_exported(name)) continue;
      std::string samples;
      if (!add_sample(line, name, label, samples)) continue;
      family(family_of(name, families)).samples += samples;
    }
  }
  std::string out;
  for (const auto& name : order) {
    const auto& f = families.at(name);
    if (f.samples.empty()) continue;
    if (!f.help.empty()) out += f.help + "\n";
    if (!f.type.empty()) out += f.type + "\n";
    out += f.samples;
  }
  return out;
}

}  // namespace switchyard::obs
