// Per-GPU temperatures, power and clocks from the device's hwmon directory
// (`<device>/hwmon/hwmon*/`), as amdgpu and most drivers expose them:
// temp*_input in millidegrees C, power1_average/power1_input and power1_cap
// in microwatts, freq*_input in Hz, each with an optional *_label.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace switchyard::doctor {

struct GpuSensors {
  std::string driver;                                          // hwmon `name`, e.g. "amdgpu"
  std::vector<std::pair<std::string, double>> temperatures_c;  // ("edge", 45.0)
  std::optional<double> power_w;
  std::optional<double> power_cap_w;
  std::vector<std::pair<std::string, double>> clocks_mhz;  // ("sclk", 2482.0)
  std::optional<double> fan_rpm;
};

// nullopt when the device has no hwmon directory.
std::optional<GpuSensors> read_gpu_sensors(const std::filesystem::path& device_dir);

// "edge 45 °C, junction 52 °C, 61 W of 327 W, sclk 2482 MHz, mclk 1249 MHz".
std::string describe_sensors(const GpuSensors& sensors);

}  // namespace switchyard::doctor
