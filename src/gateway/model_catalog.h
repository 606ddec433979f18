// Model names and aliases: what clients may ask for, and what it resolves to.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "config/fleet_config.h"

namespace switchyard::gateway {

class ModelCatalog {
 public:
  explicit ModelCatalog(const std::vector<config::ModelConfig>& models);

  // The canonical model for a name or alias.
  std::optional<std::string> resolve(std::string_view name) const;
  // The model a request that names none runs on: the one behind the alias
  // `default`, else the only model; nullopt when that is ambiguous.
  std::optional<std::string> default_model() const;
  const std::vector<config::ModelConfig>& models() const { return models_; }
  // "a, b (alias of a), …", for error messages.
  std::string describe() const;

 private:
  std::vector<config::ModelConfig> models_;
  std::unordered_map<std::string, std::string> canonical_;  // name or alias → model
};

}  // namespace switchyard::gateway
