// Builds sysfs trees in a temporary directory, in the real layout:
// bus/pci/devices/<address> are relative symlinks into
// devices/pci0000:00/<root port>/<bridge>/…/<address>, each device directory
// holding vendor/device/class, the link attributes and a `config` file with a
// real capability list (vendor-specific → power management → PCI Express →
// MSI, as on AMD cards). `config_bytes` 64 gives what a non-root user reads.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "doctor/pcie_config.h"

namespace switchyard::doctor::fixture {

namespace fs = std::filesystem;

struct FakeFunction {
  std::string address;
  std::string parent;  // the bridge above, "" for a device on the root bus
  std::uint16_t vendor = 0;
  std::uint16_t device = 0;
  std::uint32_t class_code = 0;
  PortType port_type = PortType::endpoint;
  std::uint32_t devcap2 = 0;
  std::uint16_t devctl2 = 0;
  double cur_gts = 0;  // 0: no link attributes written
  int cur_width = 0;
  double max_gts = 0;
  int max_width = 0;
};

inline unsigned speed_code(double gts) {
  if (gts >= 64) return 6;
  if (gts >= 32) return 5;
  if (gts >= 16) return 4;
  if (gts >= 8) return 3;
  if (gts >= 5) return 2;
  return gts > 0 ? 1 : 0;
}

// 4096 bytes of config space with a capability list, truncated to `size`.
inline std::vector<std::uint8_t> config_bytes(const FakeFunction& f, std::size_t size = 4096,
                                              int pcie_version = 2) {
  std::vector<std::uint8_t> c(4096, 0);
  auto put16 = [&](std::size_t at, std::uint32_t v) {
    c[at] = v & 0xff;
    c[at + 1] = (v >> 8) & 0xff;
  };
  auto put32 = [&](std::size_t at, std::uint32_t v) {
    put16(at, v & 0xffff);
    put16(at + 2, v >> 16);
  };
  put16(0x00, f.vendor);
  put16(0x02, f.device);
  put16(0x04, 0x0406);  // command: memory, bus master
  put16(0x06, 0x0010);  // status: capability list present
  c[0x08] = 0xc8;       // revision
  c[0x09] = f.class_code & 0xff;
  c[0x0a] = (f.class_code >> 8) & 0xff;
  c[0x0b] = (f.class_code >> 16) & 0xff;
  c[0x0e] = (f.class_code >> 8) == 0x0604 ? 0x01 : 0x00;  // type 1 header for bridges
  c[0x34] = 0x48;
  c[0x48] = 0x09;  // vendor specific
  c[0x49] = 0x50;
  c[0x50] = 0x01;  // power management
  c[0x51] = 0x64;
  c[0x64] = 0x10;  // PCI Express
  c[0x65] = 0xa0;
  put16(0x64 + 0x02,
        static_cast<unsigned>(pcie_version) | (static_cast<unsigned>(f.port_type) << 4));
  put32(0x64 + 0x0c, speed_code(f.max_gts) | (static_cast<unsigned>(f.max_width) << 4));
  put16(0x64 + 0x12, speed_code(f.cur_gts) | (static_cast<unsigned>(f.cur_width) << 4));
  put32(0x64 + 0x24, f.devcap2);
  put16(0x64 + 0x28, f.devctl2);
  c[0xa0] = 0x05;  // MSI, end of list
  c[0xa1] = 0x00;
  c.resize(size);
  return c;
}

class SysfsTree {
 public:
  explicit SysfsTree(std::size_t config_size = 4096) : config_size_(config_size) {
    std::string tmpl = (fs::temp_directory_path() / "sy-doctor-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    root_ = tmpl;
  }
  ~SysfsTree() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  SysfsTree(const SysfsTree&) = delete;
  SysfsTree& operator=(const SysfsTree&) = delete;

  const fs::path& root() const { return root_; }

  // The device's directory below devices/; its parent must have been added.
  fs::path device_dir(const std::string& address) const {
    std::vector<std::string> chain;
    for (std::string a = address; !a.empty(); a = functions_.at(a).parent) chain.push_back(a);
    fs::path dir = root_ / "devices" / ("pci" + chain.back().substr(0, 7));
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) dir /= *it;
    return dir;
  }

  void add(const FakeFunction& f) {
    functions_[f.address] = f;
    const fs::path dir = device_dir(f.address);
    fs::create_directories(dir);
    write(dir / "vendor", hex(f.vendor, 4));
    write(dir / "device", hex(f.device, 4));
    write(dir / "class", hex(f.class_code, 6));
    if (f.cur_gts > 0) {
      write(dir / "current_link_speed", speed_text(f.cur_gts));
      write(dir / "current_link_width", std::to_string(f.cur_width) + "\n");
      write(dir / "max_link_speed", speed_text(f.max_gts));
      write(dir / "max_link_width", std::to_string(f.max_width) + "\n");
    }
    const auto bytes = config_bytes(f, config_size_);
    std::ofstream(dir / "config", std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));

    const fs::path bus = root_ / "bus" / "pci" / "devices";
    fs::create_directories(bus);
    // Relative, like the kernel's: ../../../devices/pci0000:00/…
    fs::create_directory_symlink(fs::path("../../..") / fs::relative(dir, root_), bus / f.address);
  }

  void add_hwmon(const std::string& address, const std::map<std::string, std::string>& files) {
    const fs::path dir = device_dir(address) / "hwmon" / "hwmon3";
    fs::create_directories(dir);
    for (const auto& [name, value] : files) write(dir / name, value + "\n");
  }

  // The DRM nodes amdgpu creates: drm/card<N> and drm/renderD<128 + N> in the device directory.
  void add_drm(const std::string& address, int minor) {
    for (const std::string& name :
         {"card" + std::to_string(minor), "renderD" + std::to_string(128 + minor)})
      fs::create_directories(device_dir(address) / "drm" / name);
  }

  void add_kfd_node(int id, const std::string& properties) {
    const fs::path dir = kfd_nodes() / std::to_string(id);
    fs::create_directories(dir / "io_links");
    write(dir / "properties", properties);
  }

  void add_kfd_link(int node, int link, const std::string& properties) {
    const fs::path dir = kfd_nodes() / std::to_string(node) / "io_links" / std::to_string(link);
    fs::create_directories(dir);
    write(dir / "properties", properties);
  }

 private:
  fs::path kfd_nodes() const { return root_ / "class" / "kfd" / "kfd" / "topology" / "nodes"; }

  static void write(const fs::path& file, const std::string& text) { std::ofstream(file) << text; }

  static std::string hex(unsigned v, int digits) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%0*x\n", digits, v);
    return buf;
  }

  static std::string speed_text(double gts) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GT/s PCIe\n", gts);
    return buf;
  }

  fs::path root_;
  std::size_t config_size_;
  std::map<std::string, FakeFunction> functions_;
};

constexpr std::uint32_t bridge_class = 0x060400;
constexpr std::uint32_t vga_class = 0x030000;
constexpr std::uint32_t all_atomics = 0x40 | 0x80 | 0x100 | 0x200;  // routing, 32, 64, 128-bit CAS

// An AMD Navi card: the card's own switch (upstream 1002:1478, downstream
// 1002:1479, as lspci lists them for Navi 31 and Navi 48 boards) above the GPU.
// `up_gts`/`up_width` is what the slot link trained to; the card's internal
// link always reads the card's full speed.
inline void add_navi_card(SysfsTree& t, const std::string& root_port, unsigned first_bus,
                          std::uint16_t gpu_device, double card_gts, double up_gts, int up_width) {
  auto addr = [](unsigned bus) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0000:%02x:00.0", bus);
    return std::string(buf);
  };
  t.add({addr(first_bus), root_port, 0x1002, 0x1478, bridge_class, PortType::upstream_port, 0x40, 0,
         up_gts, up_width, card_gts, 16});
  t.add({addr(first_bus + 1), addr(first_bus), 0x1002, 0x1479, bridge_class,
         PortType::downstream_port, 0x40, 0, card_gts, 16, card_gts, 16});
  t.add({addr(first_bus + 2), addr(first_bus + 1), 0x1002, gpu_device, vga_class,
         PortType::endpoint, 0, 0, card_gts, 16, card_gts, 16});
  // The card's HDMI/DP audio function, which must not count as a GPU.
  t.add({addr(first_bus + 2).substr(0, 11) + "1", addr(first_bus + 1), 0x1002, 0xab30, 0x040300,
         PortType::endpoint, 0, 0, card_gts, 16, card_gts, 16});
}

// The field report's box (seeds/000): B760M board, Raptor Lake CPU, two
// 7900 XTX (1002:744c). One card on the CPU's x16 root port 00:01.0 (Gen4
// x16, AtomicOps all +), one on the chipset's root port 00:1c.0 that trained
// Gen3 x4 and has no AtomicOp bits (Routing- 32bit- 64bit- 128bitCAS-).
// Host-bridge and root-port ids as listed for a B760M + 7900 XTX board
// (8086:a700, 8086:a70d PEG, 8086:7a38 PCH root port #1).
inline void add_field_box(SysfsTree& t) {
  t.add({"0000:00:00.0", "", 0x8086, 0xa700, 0x060000});
  t.add({"0000:00:17.0", "", 0x8086, 0x7a62, 0x010601});  // SATA: not a GPU
  t.add({"0000:00:01.0", "", 0x8086, 0xa70d, bridge_class, PortType::root_port, all_atomics, 0,
         16.0, 16, 32.0, 16});
  add_navi_card(t, "0000:00:01.0", 0x01, 0x744c, 16.0, 16.0, 16);
  t.add({"0000:00:1c.0", "", 0x8086, 0x7a38, bridge_class, PortType::root_port, 0, 0, 8.0, 4, 8.0,
         4});
  add_navi_card(t, "0000:00:1c.0", 0x04, 0x744c, 16.0, 8.0, 4);
  t.add_hwmon("0000:03:00.0", {{"name", "amdgpu"},
                               {"temp1_input", "45000"},
                               {"temp1_label", "edge"},
                               {"power1_average", "61000000"},
                               {"power1_cap", "327000000"},
                               {"freq1_input", "2482000000"},
                               {"freq1_label", "sclk"}});
  t.add_hwmon("0000:06:00.0", {{"name", "amdgpu"},
                               {"temp1_input", "41000"},
                               {"temp1_label", "edge"},
                               {"power1_average", "23000000"},
                               {"power1_cap", "257000000"}});
}

// Four Radeon AI PRO R9700 (1002:7551, gfx1201) on CPU root ports that give
// each slot Gen5 x8 (AMD GPP bridges 1022:14db), AtomicOps complete.
inline void add_r9700_box(SysfsTree& t) {
  const char* ports[] = {"0000:00:01.1", "0000:00:01.2", "0000:00:03.1", "0000:00:03.2"};
  unsigned bus = 0x01;
  for (const char* port : ports) {
    t.add({port, "", 0x1022, 0x14db, bridge_class, PortType::root_port, all_atomics, 0, 32.0, 8,
           32.0, 8});
    add_navi_card(t, port, bus, 0x7551, 32.0, 32.0, 8);
    bus += 3;
  }
}

}  // namespace switchyard::doctor::fixture
