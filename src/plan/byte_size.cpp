#include "plan/byte_size.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <functional>

namespace switchyard::plan {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Result<uint64_t> parse_byte_size(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  size_t number_end = 0;
  while (number_end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[number_end])) || text[number_end] == '.')) {
    ++number_end;
  }
  if (number_end == 0) return Error{quoted + " is not a size like 32G or 24GB"};
  double number = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + number_end, number);
  if (ec != std::errc() || ptr != text.data() + number_end || !(number >= 0)) {
    return Error{quoted + " is not a size like 32G or 24GB"};
  }
  const std::string unit = lower(text.substr(number_end));
  if (unit.empty() && number == 0) return uint64_t{0};  // zero needs no unit
  if (unit.empty()) return Error{quoted + " needs a unit: G/GiB (2^30 bytes) or GB (10^9 bytes)"};
  const char prefix = unit[0];
  const std::string rest = unit.substr(1);
  int power = 0;
  switch (prefix) {
    case 'k':
      power = 1;
      break;
    case 'm':
      power = 2;
      break;
    case 'g':
      power = 3;
      break;
    case 't':
      power = 4;
      break;
    default:
      return Error{quoted + " has an unknown unit (K, M, G or T expected)"};
  }
  double scale = 0;
  if (rest.empty() || rest == "i" || rest == "ib") {
    scale = std::pow(1024.0, power);
  } else if (rest == "b") {
    scale = std::pow(1000.0, power);
  } else {
    return Error{quoted + " has an unknown unit (like G, GiB or GB expected)"};
  }
  const double bytes = number * scale;
  if (bytes >= 18446744073709551615.0) return Error{quoted + " is too large"};
  return static_cast<uint64_t>(std::llround(bytes));
}

namespace {

// One "4x32G" or "32G" item.
Result<GpuSpec> parse_card_group(std::string_view text) {
  const auto x = text.find_first_of("xX");
  GpuSpec spec;
  std::string_view size_text = text;
  if (x != std::string_view::npos) {
    const std::string_view count_text = text.substr(0, x);
    uint32_t count = 0;
    const auto [ptr, ec] =
        std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
    if (ec != std::errc() || ptr != count_text.data() + count_text.size() || count == 0 ||
        count > 1024) {
      return Error{"'" + std::string(text) + "' is not like 4x32G (a card count from 1 to 1024)"};
    }
    spec.count = count;
    size_text = text.substr(x + 1);
  } else {
    spec.count = 1;
  }
  auto bytes = parse_byte_size(size_text);
  if (!bytes) {
    if (x == std::string_view::npos) return bytes.error();
    return Error{"'" + std::string(text) + "': " + bytes.error().message};
  }
  if (*bytes == 0) return Error{"'" + std::string(text) + "' gives the cards no memory"};
  spec.bytes_each = *bytes;
  return spec;
}

}  // namespace

Result<GpuSpec> parse_gpu_spec(std::string_view text) {
  GpuSpec spec;
  size_t at = 0;
  while (true) {
    const size_t comma = text.find(',', at);
    const std::string_view item =
        text.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at);
    if (item.empty()) return Error{"'" + std::string(text) + "' has an empty item (like 24G,32G)"};
    auto group = parse_card_group(item);
    if (!group) return group.error();
    spec.cards.insert(spec.cards.end(), group->count, group->bytes_each);
    if (spec.cards.size() > 1024) return Error{"'" + std::string(text) + "' lists over 1024 cards"};
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  std::sort(spec.cards.begin(), spec.cards.end(), std::greater<>());
  spec.count = static_cast<uint32_t>(spec.cards.size());
  spec.bytes_each = spec.cards.back();
  return spec;
}

std::string format_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  const bool negative = bytes < 0;
  double v = std::fabs(bytes);
  int unit = 0;
  while (v >= 1024.0 && unit < 5) {
    v /= 1024.0;
    ++unit;
  }
  const char* sign = negative ? "-" : "";
  if (unit == 0) return fmt::format("{}{:.0f} B", sign, v);
  return fmt::format("{}{:.{}f} {}", sign, v, v < 10 ? 2 : 1, kUnits[unit]);
}

}  // namespace switchyard::plan
