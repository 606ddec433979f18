#include "gateway/model_catalog.h"

namespace switchyard::gateway {

ModelCatalog::ModelCatalog(const std::vector<config::ModelConfig>& models) : models_(models) {
  for (const auto& m : models_) {
    canonical_.emplace(m.name, m.name);
    for (const auto& a : m.aliases) canonical_.emplace(a, m.name);
  }
}

std::optional<std::string> ModelCatalog::resolve(std::string_view name) const {
  auto it = canonical_.find(std::string(name));
  if (it == canonical_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> ModelCatalog::default_model() const {
  if (auto named = resolve("default")) return named;
  if (models_.size() == 1) return models_.front().name;
  return std::nullopt;
}

std::string ModelCatalog::describe() const {
  std::string out;
  for (const auto& m : models_) {
    out += (out.empty() ? "" : ", ") + m.name;
    for (const auto& a : m.aliases) out += ", " + a + " (alias of " + m.name + ")";
  }
  return out;
}

}  // namespace switchyard::gateway
