// PCIe link speed and width: parsing what Linux reports, and turning a link
// into the bandwidth a person can compare ("8.0 GT/s x4 (≈3.9 GB/s)").
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace switchyard::doctor {

// What one PCI function reports about its link. Any field may be missing:
// sysfs omits the attributes on some devices and says "Unknown" on others.
struct LinkState {
  std::optional<double> current_gts;
  std::optional<int> current_width;
  std::optional<double> max_gts;
  std::optional<int> max_width;
};

// Parses sysfs `current_link_speed` / `max_link_speed`: "16.0 GT/s PCIe" on
// current kernels, "16 GT/s" or "2.5 GT/s" on older ones; nullopt for "Unknown".
std::optional<double> parse_link_speed(std::string_view text);

// Parses `current_link_width` / `max_link_width` ("16"); nullopt for 0 or junk.
std::optional<int> parse_link_width(std::string_view text);

// The speed a Link Capabilities / Link Status speed code (bits 3:0) stands for.
std::optional<double> speed_from_code(unsigned code);

// Usable bandwidth per direction after line encoding: 8b/10b up to 5 GT/s,
// 128b/130b for 8–32 GT/s, 242/256 FLIT for 64 GT/s. Protocol overhead (TLP
// headers) is not subtracted, so measured copies land ~10% lower (the field
// report measured 27.7 GB/s on Gen4 x16 and 3.6 GB/s on Gen3 x4).
double link_gbytes_per_s(double gts, int width);

// "8.0 GT/s x4 (≈3.9 GB/s)".
std::string describe_link(double gts, int width);

}  // namespace switchyard::doctor
