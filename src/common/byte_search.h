// A fixed needle found in many short haystacks (a stream's chunks).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace switchyard {

// Horspool's search: skips ahead by up to the needle's length, where
// string_view::find stops at every occurrence of the needle's first byte
// (glibc's memmem costs more to set up than a chunk takes to search, and
// std::boyer_moore_horspool_searcher hashes every byte it looks at).
class ByteSearch {
 public:
  // `needle` (non-empty) must outlive the searcher.
  explicit ByteSearch(std::string_view needle) : needle_(needle) {
    skip_.fill(capped(needle.size()));
    for (std::size_t i = 0; i + 1 < needle.size(); ++i)
      skip_[static_cast<unsigned char>(needle[i])] = capped(needle.size() - 1 - i);
  }
  // The first occurrence in `haystack` at or after `from`.
  std::optional<std::size_t> find(std::string_view haystack, std::size_t from = 0) const {
    const std::size_t n = needle_.size();
    const char* h = haystack.data();
    for (std::size_t at = from; at + n <= haystack.size();) {
      const char last = h[at + n - 1];
      if (last == needle_[n - 1]) {
        std::size_t i = n - 1;
        while (i > 0 && h[at + i - 1] == needle_[i - 1]) --i;
        if (i == 0) return at;
      }
      at += skip_[static_cast<unsigned char>(last)];
    }
    return std::nullopt;
  }
  std::size_t size() const { return needle_.size(); }

 private:
  // Skips are bytes, not words: a stream's rewriter holds a searcher for as
  // long as the stream is open (256 bytes, not 2 KiB, each of 5,000 idle
  // streams: docs/reliability.md). A needle over 255 bytes skips at most
  // 255, which is still safe (Horspool may skip less, never more).
  static std::uint8_t capped(std::size_t n) {
    return static_cast<std::uint8_t>(std::min<std::size_t>(n, 255));
  }

  std::string_view needle_;
  std::array<std::uint8_t, 256> skip_;
};

}  // namespace switchyard
