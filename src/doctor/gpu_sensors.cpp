#include "doctor/gpu_sensors.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <system_error>

namespace switchyard::doctor {
namespace fs = std::filesystem;
namespace {

std::optional<std::string> read_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

std::optional<double> read_number(const fs::path& file) {
  auto text = read_line(file);
  if (!text) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(text->c_str(), &end);
  if (end == text->c_str()) return std::nullopt;
  return value;
}

// temp1_input, temp2_input … in numeric order, with their labels.
std::vector<std::pair<std::string, double>> numbered(const fs::path& dir, const std::string& kind,
                                                     double scale) {
  std::vector<std::pair<std::string, double>> values;
  for (int i = 1; i <= 16; ++i) {
    const std::string stem = kind + std::to_string(i);
    auto value = read_number(dir / (stem + "_input"));
    if (!value) continue;
    auto label = read_line(dir / (stem + "_label"));
    values.emplace_back(label.value_or(stem), *value * scale);
  }
  return values;
}

}  // namespace

std::optional<GpuSensors> read_gpu_sensors(const fs::path& device_dir) {
  std::error_code ec;
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(device_dir / "hwmon", ec))
    dirs.push_back(entry.path());
  if (dirs.empty()) return std::nullopt;
  std::sort(dirs.begin(), dirs.end());
  const fs::path& dir = dirs.front();

  GpuSensors sensors;
  sensors.driver = read_line(dir / "name").value_or("");
  sensors.temperatures_c = numbered(dir, "temp", 1e-3);
  sensors.clocks_mhz = numbered(dir, "freq", 1e-6);
  if (auto p = read_number(dir / "power1_average")) {
    sensors.power_w = *p * 1e-6;
  } else if (auto q = read_number(dir / "power1_input")) {
    sensors.power_w = *q * 1e-6;
  }
  if (auto cap = read_number(dir / "power1_cap")) sensors.power_cap_w = *cap * 1e-6;
  if (auto fan = read_number(dir / "fan1_input")) sensors.fan_rpm = *fan;
  return sensors;
}

std::string describe_sensors(const GpuSensors& s) {
  std::vector<std::string> parts;
  for (const auto& [label, c] : s.temperatures_c)
    parts.push_back(fmt::format("{} {:.0f} °C", label, c));
  if (s.power_w && s.power_cap_w) {
    parts.push_back(fmt::format("{:.0f} W of {:.0f} W", *s.power_w, *s.power_cap_w));
  } else if (s.power_w) {
    parts.push_back(fmt::format("{:.0f} W", *s.power_w));
  }
  for (const auto& [label, mhz] : s.clocks_mhz)
    parts.push_back(fmt::format("{} {:.0f} MHz", label, mhz));
  if (s.fan_rpm) parts.push_back(fmt::format("fan {:.0f} rpm", *s.fan_rpm));
  std::string joined;
  for (const auto& part : parts) joined += (joined.empty() ? "" : ", ") + part;
  return joined.empty() ? "no readings" : joined;
}

}  // namespace switchyard::doctor
