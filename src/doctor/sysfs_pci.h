// Reads PCI functions from sysfs: `<root>/bus/pci/devices/*` are symlinks into
// `<root>/devices/pci<domain>:<bus>/…/<address>`, and the directories on the way
// are the bridges between a device and its root port. `root` stands in for
// `/sys` so tests can build the same layout in a temporary directory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "doctor/pcie_config.h"
#include "doctor/pcie_link.h"

namespace switchyard::doctor {

struct PciFunction {
  std::string address;        // "0000:06:00.0"
  std::filesystem::path dir;  // the device's real sysfs directory
  std::uint16_t vendor_id = 0;
  std::uint16_t device_id = 0;
  std::uint32_t class_code = 0;       // 0x030000 for a VGA controller
  LinkState link;                     // sysfs link attributes, else the config-space registers
  std::optional<ConfigSpace> config;  // nullopt when `config` could not be read at all
  std::string config_error;           // why, when config is nullopt
};

// "DDDD:BB:DD.F" in lower- or upper-case hex (a five-digit domain behind Intel VMD).
bool is_pci_address(std::string_view name);

// A sysfs attribute's first line without its trailing space; nullopt when it
// cannot be read.
std::optional<std::string> read_first_line(const std::filesystem::path& file);

// Bus 0x06 of "0000:06:00.0"; device 0x1c of "0000:00:1c.0".
unsigned pci_bus(std::string_view address);
unsigned pci_device(std::string_view address);

// Addresses under `<root>/bus/pci/devices`, sorted; nullopt when that directory
// does not exist (a container or a VM without PCI).
std::optional<std::vector<std::string>> list_pci_addresses(const std::filesystem::path& root);

// Reads one function's identity, link attributes and config space from its
// sysfs directory. Missing link attributes are left empty; an unreadable
// `vendor`/`device`/`class` is an Error naming the file.
Result<PciFunction> read_pci_function(const std::filesystem::path& dir);

// The function `address` and the bridges above it, read from the directory its
// bus/pci/devices symlink resolves to: `upstream` runs from the root port down
// to the device's parent, and is empty for a device on a root bus.
struct PciChain {
  PciFunction device;
  std::vector<PciFunction> upstream;
};
Result<PciChain> read_pci_chain(const std::filesystem::path& root, std::string_view address);

// Display/3D controllers (class 0x03) from AMD (0x1002), NVIDIA (0x10de) or
// Intel (0x8086), and AMD processing accelerators (class 0x12: Instinct cards).
bool is_gpu(const PciFunction& function);

}  // namespace switchyard::doctor
