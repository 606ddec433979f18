// A 64-bit value as 16 lower-case hex digits, zero-padded: the ids the
// gateway makes on every request (request ids, session ids), where fmt's
// machinery for one number was most of their cost.
#pragma once

#include <cstdint>

namespace switchyard {

// Writes the 16 digits at `out`.
inline void write_hex64(std::uint64_t value, char* out) {
  for (int i = 15; i >= 0; --i, value >>= 4) out[i] = "0123456789abcdef"[value & 15];
}

}  // namespace switchyard
