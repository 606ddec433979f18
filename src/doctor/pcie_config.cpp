#include "doctor/pcie_config.h"

#include <fstream>
#include <iterator>
#include <vector>

namespace switchyard::doctor {
namespace {

std::uint16_t read16(std::span<const std::uint8_t> b, std::size_t at) {
  return static_cast<std::uint16_t>(b[at] | (b[at + 1] << 8));
}

std::uint32_t read32(std::span<const std::uint8_t> b, std::size_t at) {
  return static_cast<std::uint32_t>(b[at]) | (static_cast<std::uint32_t>(b[at + 1]) << 8) |
         (static_cast<std::uint32_t>(b[at + 2]) << 16) |
         (static_cast<std::uint32_t>(b[at + 3]) << 24);
}

constexpr std::size_t status_register = 0x06;
constexpr std::uint16_t status_has_capability_list = 0x10;
constexpr std::size_t standard_header_size = 0x40;
// Linux bounds the walk the same way (PCI_FIND_CAP_TTL in drivers/pci/pci.c),
// so a looping list in broken hardware cannot hang us.
constexpr int capability_walk_limit = 48;

}  // namespace

Result<ConfigSpace> parse_config_space(std::span<const std::uint8_t> bytes) {
  if (bytes.size() < 0x10) {
    return Error{"config space holds " + std::to_string(bytes.size()) +
                 " bytes, fewer than the 16 that identify a device"};
  }
  ConfigSpace config;
  config.readable_bytes = bytes.size();
  config.vendor_id = read16(bytes, 0x00);
  config.device_id = read16(bytes, 0x02);
  config.class_code = read32(bytes, 0x08) >> 8;

  if (bytes.size() <= capability_pointer_offset) {
    config.pcie_lookup = CapabilityLookup::unreadable;
    return config;
  }
  if (!(read16(bytes, status_register) & status_has_capability_list)) {
    config.pcie_lookup = CapabilityLookup::absent;
    return config;
  }

  std::size_t at = bytes[capability_pointer_offset] & 0xfc;
  for (int ttl = capability_walk_limit; ttl > 0 && at >= standard_header_size; --ttl) {
    if (at + 2 > bytes.size()) {
      config.pcie_lookup = CapabilityLookup::unreadable;
      return config;
    }
    if (bytes[at] == pcie_capability_id) {
      if (at + pcie_reg::end > bytes.size()) {
        config.pcie_lookup = CapabilityLookup::unreadable;
        return config;
      }
      PcieCapability& cap = config.pcie;
      const std::uint16_t flags = read16(bytes, at + pcie_reg::capabilities);
      cap.offset = static_cast<std::uint8_t>(at);
      cap.port_type = static_cast<PortType>((flags >> 4) & 0xf);
      cap.link_caps = read32(bytes, at + pcie_reg::link_caps);
      cap.link_status = read16(bytes, at + pcie_reg::link_status);
      // Version 1 capabilities end before Device Capabilities 2: whatever the
      // bytes there hold belongs to someone else.
      if ((flags & 0xf) >= 2) {
        cap.device_caps2 = read32(bytes, at + pcie_reg::device_caps2);
        cap.device_control2 = read16(bytes, at + pcie_reg::device_control2);
      }
      config.pcie_lookup = CapabilityLookup::found;
      return config;
    }
    at = bytes[at + 1] & 0xfc;
  }
  config.pcie_lookup = CapabilityLookup::absent;
  return config;
}

Result<ConfigSpace> read_config_space(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return Error{"cannot open " + file.string()};
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  auto parsed = parse_config_space(bytes);
  if (!parsed) return Error{file.string() + ": " + parsed.error().message};
  return parsed;
}

}  // namespace switchyard::doctor
