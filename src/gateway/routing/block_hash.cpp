#include "gateway/routing/block_hash.h"

#include <cstring>

namespace switchyard::gateway {

namespace {

// splitmix64's finaliser: every input bit reaches every output bit.
std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Folds `bytes` into `h` a word at a time (an agent's 200 KB prompt is
// hashed on every routing decision, so this must be cheap).
std::uint64_t fold(std::uint64_t h, std::string_view bytes) {
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    h = mix(h ^ w) + 0x9e3779b97f4a7c15ull;
  }
  if (i < bytes.size()) {
    std::uint64_t w = 0;
    std::memcpy(&w, bytes.data() + i, bytes.size() - i);
    h = mix(h ^ w ^ (std::uint64_t{bytes.size() - i} << 59)) + 0x9e3779b97f4a7c15ull;
  }
  return h;
}

}  // namespace

void hash_blocks(std::string_view model, std::string_view prompt, std::vector<BlockHash>& out,
                 std::size_t block_bytes) {
  out.clear();
  if (block_bytes == 0) return;
  // The model's length goes in too: "ab"+"c…" and "a"+"bc…" stay apart.
  BlockHash h = mix(fold(mix(model.size()), model));
  out.reserve(prompt.size() / block_bytes);
  for (std::size_t at = 0; at + block_bytes <= prompt.size(); at += block_bytes) {
    h = mix(fold(h, prompt.substr(at, block_bytes)));
    out.push_back(h);
  }
}

}  // namespace switchyard::gateway
