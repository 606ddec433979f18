#include "sim/prefix_cache.h"

#include <algorithm>

namespace switchyard::sim {

int common_prefix(const std::vector<Token>& a, const std::vector<Token>& b) {
  const auto n = std::min(a.size(), b.size());
  const auto diff = std::mismatch(a.begin(), a.begin() + n, b.begin());
  return static_cast<int>(diff.first - a.begin());
}

BlockHash block_hash(BlockHash parent, const std::vector<Token>& tokens, int index,
                     int block_size) {
  // FNV-1a over the parent hash and the block's token ids.
  BlockHash h = 0xcbf29ce484222325ull ^ parent;
  const auto mix = [&h](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 0x100000001b3ull;
    }
  };
  mix(parent);
  const auto begin = static_cast<std::size_t>(index) * block_size;
  for (std::size_t i = begin; i < begin + block_size; ++i)
    mix(static_cast<std::uint32_t>(tokens[i]));
  return h;
}

}  // namespace switchyard::sim
