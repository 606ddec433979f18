// Memory sizes as people type and read them. "32G", "32GiB" and "32Gi" are binary (GiB);
// "32GB" is decimal (10^9 bytes), the way GPU vendors print card sizes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace switchyard::plan {

// A box's GPUs: `count` cards, each card's memory in `cards` (largest first), `bytes_each` the
// smallest's.
struct GpuSpec {
  uint32_t count = 0;
  uint64_t bytes_each = 0;
  std::vector<uint64_t> cards;

  bool mixed() const { return !cards.empty() && cards.front() != cards.back(); }
};

// Parses "24G", "23.5GiB", "32GB", "512M", "1T", "0". The unit is required except for zero (K, M,
// G, T with an optional "i"/"iB" for binary; "KB", "MB", "GB", "TB" for decimal; any case). The
// error text names no flag: callers prefix it with the flag the text came from.
Result<uint64_t> parse_byte_size(std::string_view text);

// Parses "4x32G" (four cards of 32 GiB), "32G" (one card), or a comma-separated mix of those:
// "24G,32G", "2x24G,2x32G".
Result<GpuSpec> parse_gpu_spec(std::string_view text);

// "640 B", "1.5 KiB", "31.99 GiB": binary units, for people.
std::string format_bytes(double bytes);

}  // namespace switchyard::plan
