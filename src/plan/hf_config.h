// Model facts from a Hugging Face config.json, for checkpoints served by vLLM. When the config has
// a text_config (multimodal checkpoints), the language model's fields are read from it.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "common/result.h"
#include "plan/model_facts.h"

namespace switchyard::plan {

// Facts from the text of a config.json. weights_bytes stays unknown: the config does not say.
Result<ModelFacts> facts_from_hf_config(std::string_view json_text, const std::string& source);

// Reads `path` (a config.json, or a directory holding one). The weights' size comes from
// model.safetensors.index.json (metadata.total_size) or model.safetensors beside it when present.
Result<ModelFacts> load_hf_config(const std::filesystem::path& path);

}  // namespace switchyard::plan
