#include "doctor/sysfs_pci.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <system_error>

namespace switchyard::doctor {
namespace fs = std::filesystem;
std::optional<std::string> read_first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

namespace {

Result<unsigned long> read_hex_attribute(const fs::path& file) {
  auto text = read_first_line(file);
  if (!text) return Error{"cannot read " + file.string()};
  char* end = nullptr;
  const unsigned long value = std::strtoul(text->c_str(), &end, 16);
  if (end == text->c_str()) return Error{file.string() + ": not a hex number: " + *text};
  return value;
}

bool is_hex(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

unsigned hex_field(std::string_view s) {
  return static_cast<unsigned>(std::strtoul(std::string(s).c_str(), nullptr, 16));
}

}  // namespace

bool is_pci_address(std::string_view name) {
  // The domain has four hex digits, or five behind Intel VMD (10000:e0:06.0).
  if (name.size() < 12 || name.size() > 13) return false;
  const std::size_t d = name.size() - 8;  // where ":BB:DD.F" starts
  return name[d] == ':' && name[d + 3] == ':' && name[d + 6] == '.' && is_hex(name.substr(0, d)) &&
         is_hex(name.substr(d + 1, 2)) && is_hex(name.substr(d + 4, 2)) && name[d + 7] >= '0' &&
         name[d + 7] <= '7';
}

unsigned pci_bus(std::string_view address) {
  return hex_field(address.substr(address.size() - 7, 2));
}
unsigned pci_device(std::string_view address) {
  return hex_field(address.substr(address.size() - 4, 2));
}

std::optional<std::vector<std::string>> list_pci_addresses(const fs::path& root) {
  const fs::path dir = root / "bus" / "pci" / "devices";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  std::vector<std::string> addresses;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (is_pci_address(name)) addresses.push_back(name);
  }
  std::sort(addresses.begin(), addresses.end());
  return addresses;
}

Result<PciFunction> read_pci_function(const fs::path& dir) {
  PciFunction f;
  f.dir = dir;
  f.address = dir.filename().string();
  auto vendor = read_hex_attribute(dir / "vendor");
  if (!vendor) return vendor.error();
  auto device = read_hex_attribute(dir / "device");
  if (!device) return device.error();
  auto klass = read_hex_attribute(dir / "class");
  if (!klass) return klass.error();
  f.vendor_id = static_cast<std::uint16_t>(*vendor);
  f.device_id = static_cast<std::uint16_t>(*device);
  f.class_code = static_cast<std::uint32_t>(*klass);

  if (auto s = read_first_line(dir / "current_link_speed"))
    f.link.current_gts = parse_link_speed(*s);
  if (auto s = read_first_line(dir / "max_link_speed")) f.link.max_gts = parse_link_speed(*s);
  if (auto s = read_first_line(dir / "current_link_width"))
    f.link.current_width = parse_link_width(*s);
  if (auto s = read_first_line(dir / "max_link_width")) f.link.max_width = parse_link_width(*s);

  auto config = read_config_space(dir / "config");
  if (config) {
    f.config = std::move(config.value());
    // Older kernels lack the link attributes; the registers say the same thing.
    if (f.config->pcie_lookup == CapabilityLookup::found) {
      const PcieCapability& cap = f.config->pcie;
      if (!f.link.current_gts) f.link.current_gts = speed_from_code(cap.link_status & 0xf);
      if (!f.link.current_width && ((cap.link_status >> 4) & 0x3f))
        f.link.current_width = (cap.link_status >> 4) & 0x3f;
      if (!f.link.max_gts) f.link.max_gts = speed_from_code(cap.link_caps & 0xf);
      if (!f.link.max_width && ((cap.link_caps >> 4) & 0x3f))
        f.link.max_width = (cap.link_caps >> 4) & 0x3f;
    }
  } else {
    f.config_error = config.error().message;
  }
  return f;
}

Result<PciChain> read_pci_chain(const fs::path& root, std::string_view address) {
  const fs::path link = root / "bus" / "pci" / "devices" / std::string(address);
  std::error_code ec;
  const fs::path real = fs::canonical(link, ec);
  if (ec) return Error{"cannot resolve " + link.string() + ": " + ec.message()};

  auto device = read_pci_function(real);
  if (!device) return device.error();
  PciChain chain{std::move(device.value()), {}};
  chain.device.address = std::string(address);

  // Walk up until the host bridge directory ("pci0000:00"): every PCI-address
  // directory on the way is a bridge between the device and the root complex.
  for (fs::path dir = real.parent_path(); is_pci_address(dir.filename().string());
       dir = dir.parent_path()) {
    auto bridge = read_pci_function(dir);
    if (!bridge) return bridge.error();
    chain.upstream.push_back(std::move(bridge.value()));
  }
  std::reverse(chain.upstream.begin(), chain.upstream.end());
  return chain;
}

bool is_gpu(const PciFunction& function) {
  const unsigned base_class = function.class_code >> 16;
  const bool gpu_vendor =
      function.vendor_id == 0x1002 || function.vendor_id == 0x10de || function.vendor_id == 0x8086;
  // Class 0x12 only for AMD: Intel files its NPUs there too, and those are not GPUs.
  return (base_class == 0x03 && gpu_vendor) || (base_class == 0x12 && function.vendor_id == 0x1002);
}

}  // namespace switchyard::doctor
