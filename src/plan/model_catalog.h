// Common architectures built in, for planning before the model is downloaded: `--model
// qwen3-32b`. Each entry is the architecture part of the model's public config.json (the numbers
// KV math needs, copied as published); the weights' size depends on the quantization and comes
// from --weights-size.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "plan/model_facts.h"

namespace switchyard::plan {

struct CatalogEntry {
  std::string_view name;         // what --model takes, e.g. "qwen3-32b"
  std::string_view repository;   // where the config.json is published
  std::string_view config_json;  // its architecture fields
};

const std::vector<CatalogEntry>& model_catalog();

// The entry's facts (format "catalog", source its repository, which vLLM takes as the model);
// nullopt when `name` is not in the catalog.
std::optional<Result<ModelFacts>> catalog_model(std::string_view name);

// "qwen3-32b, llama-3.1-70b, …": for error messages and --help.
std::string catalog_names();

}  // namespace switchyard::plan
