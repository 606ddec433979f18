// PCI configuration space as Linux exposes it in sysfs (`<device>/config`),
// parsed just far enough for doctor: identity, the PCI Express capability, its
// AtomicOp bits and link registers.
//
// A non-root reader gets only the first 64 bytes of `config` (the standard
// header); the capability list lives beyond them, so the PCIe capability is then
// reported as unreadable rather than absent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

#include "common/result.h"

namespace switchyard::doctor {

// Device/Port Type, PCIe Capabilities register (cap + 0x02) bits 7:4.
enum class PortType : std::uint8_t {
  endpoint = 0x0,
  legacy_endpoint = 0x1,
  root_port = 0x4,
  upstream_port = 0x5,
  downstream_port = 0x6,
  pcie_to_pci_bridge = 0x7,
  pci_to_pcie_bridge = 0x8,
  rc_integrated_endpoint = 0x9,
  rc_event_collector = 0xa,
};

// Device Capabilities 2 (cap + 0x24) and Device Control 2 (cap + 0x28) bits,
// as in Linux's include/uapi/linux/pci_regs.h (PCI_EXP_DEVCAP2_ATOMIC_*).
namespace atomic_op {
inline constexpr std::uint32_t routing = 0x40;
inline constexpr std::uint32_t completer32 = 0x80;
inline constexpr std::uint32_t completer64 = 0x100;
inline constexpr std::uint32_t cas128 = 0x200;
inline constexpr std::uint16_t egress_blocking = 0x80;  // in Device Control 2
}  // namespace atomic_op

// Register offsets from the start of the PCIe capability.
namespace pcie_reg {
inline constexpr std::size_t capabilities = 0x02;
inline constexpr std::size_t link_caps = 0x0c;
inline constexpr std::size_t link_status = 0x12;
inline constexpr std::size_t device_caps2 = 0x24;
inline constexpr std::size_t device_control2 = 0x28;
inline constexpr std::size_t end = 0x2c;  // everything doctor reads lies before this
}  // namespace pcie_reg

inline constexpr std::uint8_t pcie_capability_id = 0x10;
inline constexpr std::size_t capability_pointer_offset = 0x34;

struct PcieCapability {
  std::uint8_t offset = 0;  // where the capability starts in config space
  PortType port_type = PortType::endpoint;
  std::uint32_t link_caps = 0;
  std::uint16_t link_status = 0;
  std::uint32_t device_caps2 = 0;  // zero on version-1 capabilities, which predate AtomicOps
  std::uint16_t device_control2 = 0;

  bool atomic_routing() const { return device_caps2 & atomic_op::routing; }
  bool atomic_completer32() const { return device_caps2 & atomic_op::completer32; }
  bool atomic_completer64() const { return device_caps2 & atomic_op::completer64; }
  bool atomic_cas128() const { return device_caps2 & atomic_op::cas128; }
  bool atomic_egress_blocked() const { return device_control2 & atomic_op::egress_blocking; }
};

enum class CapabilityLookup {
  found,       // `pcie` is valid
  absent,      // the device has no PCIe capability (conventional PCI)
  unreadable,  // it lies beyond the bytes we could read (non-root: 64 bytes)
};

struct ConfigSpace {
  std::size_t readable_bytes = 0;
  std::uint16_t vendor_id = 0;
  std::uint16_t device_id = 0;
  std::uint32_t class_code = 0;  // base class, subclass, prog-if: 0x030000 for VGA
  CapabilityLookup pcie_lookup = CapabilityLookup::absent;
  PcieCapability pcie;
};

// Parses config-space bytes. An Error when fewer than the 16 bytes that hold
// the identity are present; a malformed capability list (a loop, a pointer
// into the header) ends the walk as `absent`, as Linux's own walk does.
Result<ConfigSpace> parse_config_space(std::span<const std::uint8_t> bytes);

// Reads and parses a sysfs `config` file; the Error names the file.
Result<ConfigSpace> read_config_space(const std::filesystem::path& file);

}  // namespace switchyard::doctor
