// A prompt as chained block hashes, the key of the prefix index: block i's
// hash covers the model and every byte up to the end of block i, so two
// prompts share block i's hash exactly when they share that whole prefix
// (as vLLM keys its prefix cache; llm-d hashes the same way on the router
// side). The gateway hashes bytes, not tokens: it has no tokenizer, and
// engines cache the same prefix for the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "openai/request_estimate.h"

namespace switchyard::gateway {

using BlockHash = std::uint64_t;

// Bytes per block: about 16 tokens' worth at about 4 bytes a token, as
// llm-d's prefix scorer uses.
inline constexpr std::size_t kBlockBytes = 64;
// Tokens a block stands for, to size an index by an engine's KV cache.
inline constexpr long kBlockTokens = 16;

// Tokens a prompt of `bytes` is estimated at (openai/request_estimate.h).
inline long estimated_tokens(std::size_t bytes) {
  return static_cast<long>(openai::prompt_tokens_estimate(bytes));
}

// The hashes of every full block of `prompt` (a trailing partial block is
// left out, as engines cache only full blocks), seeded with `model`, so
// that different models never match. Replaces the contents of `out`.
void hash_blocks(std::string_view model, std::string_view prompt, std::vector<BlockHash>& out,
                 std::size_t block_bytes = kBlockBytes);

}  // namespace switchyard::gateway
