#include "gateway/routing/block_hash.h"

#include "common/hash.h"

namespace switchyard::gateway {

void hash_blocks(std::string_view model, std::string_view prompt, std::vector<BlockHash>& out,
                 std::size_t block_bytes) {
  out.clear();
  if (block_bytes == 0) return;
  // The model as a piece, with its length: "ab"+"c…" and "a"+"bc…" stay apart.
  BlockHash h = hash::mix(hash::piece(hash::kSeed, model));
  out.reserve(prompt.size() / block_bytes);
  for (std::size_t at = 0; at + block_bytes <= prompt.size(); at += block_bytes) {
    h = hash::mix(hash::fold(h, prompt.substr(at, block_bytes)));
    out.push_back(h);
  }
}

}  // namespace switchyard::gateway
