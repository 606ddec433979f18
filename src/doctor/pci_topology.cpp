#include "doctor/pci_topology.h"

#include <fmt/format.h>

#include <algorithm>

namespace switchyard::doctor {
namespace {

constexpr std::uint16_t vendor_intel = 0x8086;
constexpr std::uint16_t vendor_amd_cpu = 0x1022;

std::string hop_name(const PathHop& hop) {
  switch (hop.role) {
    case HopRole::root_port:
      return "root port " + hop.function.address;
    case HopRole::platform_bridge:
      return "bridge " + hop.function.address;
    case HopRole::card_bridge:
      return "card switch port " + hop.function.address;
    case HopRole::gpu:
      return "GPU " + hop.function.address;
  }
  return hop.function.address;
}

std::string id_of(const PciFunction& f) {
  return fmt::format("{:04x}:{:04x}", f.vendor_id, f.device_id);
}

std::optional<LinkSpeed> current_of(const PciFunction& f) {
  if (!f.link.current_gts || !f.link.current_width) return std::nullopt;
  return LinkSpeed{*f.link.current_gts, *f.link.current_width};
}

std::optional<LinkSpeed> max_of(const PciFunction& f) {
  if (!f.link.max_gts || !f.link.max_width) return std::nullopt;
  return LinkSpeed{*f.link.max_gts, *f.link.max_width};
}

std::string plus_minus(bool on) {
  return on ? "+" : "-";
}

}  // namespace

const char* to_string(Attachment attachment) {
  switch (attachment) {
    case Attachment::cpu:
      return "cpu";
    case Attachment::chipset:
      return "chipset";
    case Attachment::pcie_switch:
      return "pcie_switch";
    case Attachment::root_complex:
      return "root_complex";
    case Attachment::unknown:
      return "unknown";
  }
  return "unknown";
}

const char* to_string(HopRole role) {
  switch (role) {
    case HopRole::root_port:
      return "root_port";
    case HopRole::platform_bridge:
      return "platform_bridge";
    case HopRole::card_bridge:
      return "card_bridge";
    case HopRole::gpu:
      return "gpu";
  }
  return "gpu";
}

const char* to_string(AtomicsState state) {
  switch (state) {
    case AtomicsState::ok:
      return "ok";
    case AtomicsState::missing:
      return "missing";
    case AtomicsState::unchecked:
      return "unchecked";
    case AtomicsState::not_applicable:
      return "not_applicable";
  }
  return "not_applicable";
}

double LinkSpeed::gbytes_per_s() const {
  return link_gbytes_per_s(gts, width);
}

const PciFunction* GpuPath::root_port() const {
  if (hops.empty() || hops.front().role != HopRole::root_port) return nullptr;
  return &hops.front().function;
}

RootPortVerdict classify_root_port(const std::vector<PathHop>& hops) {
  if (hops.empty() || hops.front().role != HopRole::root_port) {
    return {Attachment::root_complex,
            "on the root bus itself (integrated graphics): there is no PCIe link to judge"};
  }
  const PciFunction& root = hops.front().function;
  std::vector<const PciFunction*> platform;
  for (const auto& hop : hops) {
    if (hop.role == HopRole::platform_bridge) platform.push_back(&hop.function);
  }

  if (root.vendor_id == vendor_intel) {
    const unsigned dev = pci_device(root.address);
    if (pci_bus(root.address) == 0 && dev >= 0x1a && dev <= 0x1d) {
      return {Attachment::chipset,
              fmt::format("Intel root port at device {:02x}: on bus 0, devices 1a–1d are the "
                          "chipset's (PCH) root ports; the CPU's are 01 and 06",
                          dev)};
    }
    if (!platform.empty()) {
      return {Attachment::pcie_switch,
              fmt::format("behind a PCIe switch ({}) below Intel CPU root port device {:02x}",
                          id_of(*platform.front()), dev)};
    }
    return {Attachment::cpu,
            fmt::format("Intel root port at device {:02x}: not one of the chipset's root-port "
                        "numbers (1a–1d on bus 0), so the CPU's",
                        dev)};
  }

  if (root.vendor_id == vendor_amd_cpu) {
    for (const PciFunction* bridge : platform) {
      if (bridge->vendor_id == vendor_amd_cpu) {
        return {Attachment::chipset,
                fmt::format("AMD platform: the chipset is a PCIe switch below a CPU root port, "
                            "and an AMD bridge ({} at {}) sits between the root port and the card",
                            id_of(*bridge), bridge->address)};
      }
    }
    if (!platform.empty()) {
      return {Attachment::pcie_switch,
              fmt::format("behind a PCIe switch ({}) below AMD CPU root port {}",
                          id_of(*platform.front()), root.address)};
    }
    return {Attachment::cpu,
            "AMD platform: every root port belongs to the CPU (the chipset would show as an AMD "
            "switch below it, and none is on this path)"};
  }

  return {Attachment::unknown,
          fmt::format("root port vendor {:04x} is not one doctor knows how to place (it knows "
                      "Intel 8086 and AMD 1022)",
                      root.vendor_id)};
}

AtomicsCheck check_atomics(const std::vector<PathHop>& hops) {
  AtomicsCheck check;
  if (hops.empty() || hops.front().role != HopRole::root_port) return check;

  for (const auto& hop : hops) {
    if (hop.role == HopRole::gpu) continue;
    const auto& config = hop.function.config;
    if (!config || config->pcie_lookup == CapabilityLookup::unreadable) {
      check.unreadable.push_back(hop_name(hop));
      continue;
    }
    if (config->pcie_lookup == CapabilityLookup::absent) {
      check.failures.push_back(hop_name(hop) + " is not a PCI Express port");
      continue;
    }
    const PcieCapability& cap = config->pcie;
    switch (cap.port_type) {
      case PortType::root_port:
        check.root_port_bits =
            fmt::format("Routing{} 32bit{} 64bit{} 128bitCAS{}", plus_minus(cap.atomic_routing()),
                        plus_minus(cap.atomic_completer32()), plus_minus(cap.atomic_completer64()),
                        plus_minus(cap.atomic_cas128()));
        check.root_port_completes = cap.atomic_completer32() && cap.atomic_completer64();
        if (!*check.root_port_completes) {
          std::string missing = !cap.atomic_completer32() && !cap.atomic_completer64()
                                    ? "32-bit or 64-bit"
                                    : (!cap.atomic_completer32() ? "32-bit" : "64-bit");
          check.failures.push_back(fmt::format("{} completes no {} AtomicOps ({})", hop_name(hop),
                                               missing, check.root_port_bits));
        }
        break;
      case PortType::upstream_port:
      case PortType::downstream_port:
        if (!cap.atomic_routing()) {
          check.failures.push_back(hop_name(hop) + " does not route AtomicOps");
        }
        if (cap.port_type == PortType::upstream_port && cap.atomic_egress_blocked()) {
          check.failures.push_back(hop_name(hop) + " blocks AtomicOps on egress");
        }
        break;
      default:
        break;
    }
  }
  if (!check.failures.empty()) {
    check.state = AtomicsState::missing;
  } else if (!check.unreadable.empty()) {
    check.state = AtomicsState::unchecked;
  } else {
    check.state = AtomicsState::ok;
  }
  return check;
}

GpuPath analyze_gpu_path(PciChain chain) {
  GpuPath path;
  const std::uint16_t gpu_vendor = chain.device.vendor_id;
  const std::size_t n = chain.upstream.size();

  // The card's own switch: the bridges right above the GPU that carry its
  // vendor id. The root port (index 0) never counts, even when the GPU and the
  // platform share a vendor (an Intel Arc card on an Intel board).
  std::size_t first_card_bridge = n;
  while (first_card_bridge > 1 && chain.upstream[first_card_bridge - 1].vendor_id == gpu_vendor) {
    --first_card_bridge;
  }
  for (std::size_t i = 0; i < n; ++i) {
    HopRole role = i == 0
                       ? HopRole::root_port
                       : (i >= first_card_bridge ? HopRole::card_bridge : HopRole::platform_bridge);
    path.hops.push_back({std::move(chain.upstream[i]), role});
  }
  path.hops.push_back({std::move(chain.device), HopRole::gpu});

  path.root = classify_root_port(path.hops);
  if (!path.root_port()) return path;

  // Every port reports the link on its own side, so the narrowest reading on
  // the path is the narrowest link. The card's internal link always reads full
  // speed, which is why the GPU's own reading cannot be trusted alone.
  for (const auto& hop : path.hops) {
    auto current = current_of(hop.function);
    if (!current) continue;
    if (!path.narrowest || current->gbytes_per_s() < path.narrowest->current.gbytes_per_s()) {
      path.narrowest =
          NarrowestLink{hop.function.address, hop.role, *current, max_of(hop.function)};
    }
  }
  const PathHop* card_top = &path.hops.back();
  for (const auto& hop : path.hops) {
    if (hop.role == HopRole::card_bridge) {
      card_top = &hop;
      break;
    }
  }
  path.card_max = max_of(card_top->function);
  path.atomics = check_atomics(path.hops);
  return path;
}

}  // namespace switchyard::doctor
