#include "doctor/pcie_link.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <string>

namespace switchyard::doctor {

std::optional<double> parse_link_speed(std::string_view text) {
  std::string s(text);
  char* end = nullptr;
  const double gts = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || gts <= 0) return std::nullopt;
  std::string_view rest(end);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.substr(0, 4) != "GT/s") return std::nullopt;
  return gts;
}

std::optional<int> parse_link_width(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == 'x')) text.remove_prefix(1);
  int width = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), width);
  if (ec != std::errc{} || width <= 0) return std::nullopt;
  return width;
}

std::optional<double> speed_from_code(unsigned code) {
  switch (code) {
    case 1:
      return 2.5;
    case 2:
      return 5.0;
    case 3:
      return 8.0;
    case 4:
      return 16.0;
    case 5:
      return 32.0;
    case 6:
      return 64.0;
    default:
      return std::nullopt;
  }
}

double link_gbytes_per_s(double gts, int width) {
  double efficiency = 128.0 / 130.0;
  if (gts <= 5.0) efficiency = 8.0 / 10.0;
  if (gts >= 64.0) efficiency = 242.0 / 256.0;
  return gts * efficiency / 8.0 * width;
}

std::string describe_link(double gts, int width) {
  return fmt::format("{:.1f} GT/s x{} (≈{:.1f} GB/s)", gts, width, link_gbytes_per_s(gts, width));
}

}  // namespace switchyard::doctor
