// Model facts from GGUF files: the metadata keys llama.cpp reads ({arch}.block_count,
// {arch}.attention.*, {arch}.ssm.*, ...) turned into a layer layout, and the weights' size summed
// from the tensor infos of every shard of a split model.
#pragma once

#include <filesystem>
#include <string>

#include "common/result.h"
#include "plan/gguf_reader.h"
#include "plan/model_facts.h"

namespace switchyard::plan {

// Facts from one parsed GGUF (for a split model, the first shard: it carries the metadata).
// weights_bytes is this file's tensors only.
Result<ModelFacts> facts_from_gguf(const GgufFile& file, const std::string& source);

// Reads the GGUF model at `path`. When the file says it is one of several (split.count > 1), every
// shard named like "model-00001-of-00003.gguf" beside it is read too (headers only) and their
// tensor sizes are summed; `path` may name any shard.
Result<ModelFacts> load_gguf_model(const std::filesystem::path& path);

}  // namespace switchyard::plan
