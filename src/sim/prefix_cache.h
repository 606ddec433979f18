// The two prefix caches the simulator models, as pure functions:
// llama-server's per-slot reuse of the common prefix with the slot's last
// prompt, and vLLM's chained hashes of full token blocks (shared across
// requests through the KvPool).
#pragma once

#include <vector>

#include "sim/kv_pool.h"
#include "sim/tokenizer.h"

namespace switchyard::sim {

// Length of the common prefix of a and b.
int common_prefix(const std::vector<Token>& a, const std::vector<Token>& b);

// Chained hash of block `index` of `tokens` (block_size tokens from
// index * block_size; precondition: that block is full), given the hash of
// the block before it (0 for the first). Equal hashes mean equal prefixes.
BlockHash block_hash(BlockHash parent, const std::vector<Token>& tokens, int index, int block_size);

}  // namespace switchyard::sim
