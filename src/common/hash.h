// A fast, stable 64-bit hash of bytes, a word at a time: what the gateway
// hashes on every request is an agent's whole prompt (its conversation for
// the session id, its blocks for prefix affinity), often 100 KB and more.
// Stable across runs, builds and hosts (words are read little-endian), so
// that a hash-derived session id means the same conversation to every
// gateway sharing limits. Not for secrets: keys are hashed with SHA-256.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace switchyard::hash {

inline constexpr std::uint64_t kSeed = 0x9e3779b97f4a7c15ull;

// splitmix64's finaliser: every input bit reaches every output bit.
inline std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// wyhash's step: the 128-bit product of two words, its halves xored.
inline std::uint64_t mum(std::uint64_t a, std::uint64_t b) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<std::uint64_t>(r) ^ static_cast<std::uint64_t>(r >> 64);
}

// Folds `bytes` into `h`, 16 bytes a step as wyhash does (some 0.6
// instructions a byte; a splitmix64 round every 8 bytes cost 2.1). Whole
// 16-byte steps of pieces folded one after another hash as their
// concatenation: fold a piece's length first (piece()) where the
// boundaries count.
inline std::uint64_t fold(std::uint64_t h, std::string_view bytes) {
  constexpr std::uint64_t kP0 = 0xa0761d6478bd642full, kP1 = 0xe7037ed1a0b428dbull;
  const auto load = [&](std::size_t at, auto word) {
    std::memcpy(&word, bytes.data() + at, sizeof word);
    if constexpr (std::endian::native == std::endian::big && sizeof word == 8)
      word = __builtin_bswap64(word);
    if constexpr (std::endian::native == std::endian::big && sizeof word == 4)
      word = __builtin_bswap32(word);
    return std::uint64_t{word};
  };
  // The n bytes at `at` (1 to 8) as a little-endian number. Two loads of
  // fixed size that overlap, or-ed where they meet (the same bytes there),
  // instead of a memcpy of variable size: a libc call for each short key
  // and value of a request.
  const auto word = [&](std::size_t at, std::size_t n) -> std::uint64_t {
    if (n == 8) return load(at, std::uint64_t{});
    if (n >= 4) return load(at, std::uint32_t{}) | load(at + n - 4, std::uint32_t{}) << 8 * (n - 4);
    return load(at, std::uint8_t{}) | load(at + n / 2, std::uint8_t{}) << 8 * (n / 2) |
           load(at + n - 1, std::uint8_t{}) << 8 * (n - 1);
  };
  std::size_t i = 0;
  for (; i + 16 <= bytes.size(); i += 16) h = mum(word(i, 8) ^ kP1, word(i + 8, 8) ^ h);
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    // 1 to 15 bytes; their count in the second word's top byte, which
    // holds at most 7 of them.
    const std::uint64_t a = word(i, rest < 8 ? rest : 8);
    const std::uint64_t b = rest > 8 ? word(i + 8, rest - 8) : 0;
    h = mum(a ^ kP1, b ^ h ^ kP0 ^ (std::uint64_t{rest} << 56));
  }
  return h;
}

// Folds `bytes` preceded by their length (and `tag`, a kind of piece).
inline std::uint64_t piece(std::uint64_t h, std::string_view bytes, std::uint8_t tag = 0) {
  return fold(mix(h ^ (std::uint64_t{bytes.size()} << 8 | tag)), bytes);
}

}  // namespace switchyard::hash
