#include "plan/model_facts.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace switchyard::plan {

uint32_t ModelFacts::count(LayerKind kind) const {
  return static_cast<uint32_t>(
      std::count_if(layers.begin(), layers.end(), [&](const auto& l) { return l.kind == kind; }));
}

std::optional<ShardName> parse_shard_name(std::string_view filename) {
  // "-NNNNN-of-NNNNN.gguf" is 20 characters after the prefix.
  constexpr size_t kSuffix = 20;
  if (filename.size() <= kSuffix) return std::nullopt;
  const std::string_view suffix = filename.substr(filename.size() - kSuffix);
  auto digits = [&](size_t at, uint32_t& out) {
    out = 0;
    for (size_t i = at; i < at + 5; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(suffix[i]))) return false;
      out = out * 10 + static_cast<uint32_t>(suffix[i] - '0');
    }
    return true;
  };
  ShardName shard;
  if (suffix[0] != '-' || suffix.substr(6, 4) != "-of-" || suffix.substr(15) != ".gguf" ||
      !digits(1, shard.index) || !digits(10, shard.count)) {
    return std::nullopt;
  }
  shard.prefix = std::string(filename.substr(0, filename.size() - kSuffix));
  return shard;
}

std::string model_name_from_path(const std::string& path) {
  std::filesystem::path p(path);
  std::string stem = p.filename().string();
  if (stem == "config.json" || stem.empty()) {
    stem = p.parent_path().filename().string();
  }
  if (const auto shard = parse_shard_name(stem)) {
    stem = shard->prefix;
  } else if (stem.size() > 5 && stem.ends_with(".gguf")) {
    stem.resize(stem.size() - 5);
  }
  std::string name;
  for (char c : stem) {
    const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (std::isalnum(static_cast<unsigned char>(lower)) || lower == '.' || lower == '-' ||
        lower == '_') {
      name += lower;
    } else if (!name.empty() && name.back() != '-') {
      name += '-';
    }
  }
  while (!name.empty() && name.back() == '-') name.pop_back();
  return name.empty() ? "model" : name;
}

}  // namespace switchyard::plan
