#include "obs/trace_context.h"

#include <algorithm>

namespace switchyard::obs {

namespace {

constexpr char kHex[] = "0123456789abcdef";

template <std::size_t N>
std::string hex(const std::array<std::uint8_t, N>& bytes) {
  std::string out(2 * N, '0');
  for (std::size_t i = 0; i < N; ++i) {
    out[2 * i] = kHex[bytes[i] >> 4];
    out[2 * i + 1] = kHex[bytes[i] & 0xf];
  }
  return out;
}

int nibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is invalid in traceparent
}

// Reads 2N lower-case hex digits; false on any other character.
template <std::size_t N>
bool unhex(std::string_view text, std::array<std::uint8_t, N>& out) {
  for (std::size_t i = 0; i < N; ++i) {
    const int hi = nibble(text[2 * i]), lo = nibble(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return true;
}

template <std::size_t N>
bool all_zero(const std::array<std::uint8_t, N>& id) {
  return std::all_of(id.begin(), id.end(), [](std::uint8_t b) { return b == 0; });
}

template <std::size_t N>
void fill_random(std::array<std::uint8_t, N>& id, std::mt19937_64& rng) {
  do {
    for (std::size_t i = 0; i < N; i += 8) {
      const std::uint64_t r = rng();
      for (std::size_t j = 0; j < 8 && i + j < N; ++j)
        id[i + j] = static_cast<std::uint8_t>(r >> (8 * j));
    }
  } while (all_zero(id));
}

}  // namespace

std::optional<TraceParent> parse_traceparent(std::string_view header) {
  // 2 + 1 + 32 + 1 + 16 + 1 + 2
  if (header.size() != 55 || header[2] != '-' || header[35] != '-' || header[52] != '-')
    return std::nullopt;
  if (header.substr(0, 2) != "00") return std::nullopt;
  TraceParent p;
  std::array<std::uint8_t, 1> flags{};
  if (!unhex(header.substr(3, 32), p.trace_id) || !unhex(header.substr(36, 16), p.span_id) ||
      !unhex(header.substr(53, 2), flags))
    return std::nullopt;
  if (all_zero(p.trace_id) || all_zero(p.span_id)) return std::nullopt;
  p.sampled = flags[0] & 1;
  return p;
}

std::string format_traceparent(const TraceId& trace, const SpanId& span, bool sampled) {
  return "00-" + hex(trace) + "-" + hex(span) + (sampled ? "-01" : "-00");
}

std::string to_hex(const TraceId& id) {
  return hex(id);
}
std::string to_hex(const SpanId& id) {
  return hex(id);
}

TraceId new_trace_id(std::mt19937_64& rng) {
  TraceId id;
  fill_random(id, rng);
  return id;
}
SpanId new_span_id(std::mt19937_64& rng) {
  SpanId id;
  fill_random(id, rng);
  return id;
}

}  // namespace switchyard::obs
