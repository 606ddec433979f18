// One GPU's path to the CPU: which root port it hangs off (the CPU's or the
// chipset's), the narrowest link on the way, and whether PCIe AtomicOps can
// travel it. Pure functions over what sysfs_pci read, so tests feed them
// hand-built chains.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "doctor/sysfs_pci.h"

namespace switchyard::doctor {

enum class Attachment {
  cpu,           // a root port of the CPU itself
  chipset,       // a root port of the chipset (Intel PCH), or behind AMD's chipset switch
  pcie_switch,   // behind a third-party PCIe switch below a CPU root port
  root_complex,  // on the root bus itself: integrated graphics, no PCIe link
  unknown,       // a root port vendor doctor cannot place
};
const char* to_string(Attachment attachment);

enum class HopRole {
  root_port,
  platform_bridge,  // a bridge on the board: chipset or add-on switch port
  card_bridge,      // a port of the card's own switch (AMD Navi cards carry one)
  gpu,
};
const char* to_string(HopRole role);

struct PathHop {
  PciFunction function;
  HopRole role = HopRole::gpu;
};

struct RootPortVerdict {
  Attachment attachment = Attachment::unknown;
  std::string reason;  // the heuristic that decided, in words (shown to the user)
};

struct LinkSpeed {
  double gts = 0;
  int width = 0;
  double gbytes_per_s() const;
};

// The slowest link on the path, as one function reports it.
struct NarrowestLink {
  std::string address;  // who reported it
  HopRole role = HopRole::gpu;
  LinkSpeed current;
  std::optional<LinkSpeed> port_max;  // what that port itself can train to
};

enum class AtomicsState {
  ok,              // every switch port routes, the root port completes 32- and 64-bit
  missing,         // some hop fails the kernel's test
  unchecked,       // some hop's PCIe capability could not be read (non-root)
  not_applicable,  // no root port on the path (integrated GPU)
};
const char* to_string(AtomicsState state);

struct AtomicsCheck {
  AtomicsState state = AtomicsState::not_applicable;
  std::vector<std::string> failures;    // "root port 0000:00:1c.0 completes no 32-bit AtomicOps"
  std::vector<std::string> unreadable;  // "root port 0000:00:1c.0", "card switch port 0000:04:00.0"
  std::string root_port_bits;           // lspci style: "Routing- 32bit- 64bit- 128bitCAS-"
  std::optional<bool> root_port_completes;  // 32- and 64-bit completion; nullopt when unread
};

struct GpuPath {
  std::vector<PathHop> hops;  // root port first, the GPU last; just the GPU when integrated
  RootPortVerdict root;
  std::optional<NarrowestLink> narrowest;
  std::optional<LinkSpeed> card_max;  // what the card's own upstream port can train to
  AtomicsCheck atomics;

  const PciFunction& gpu() const { return hops.back().function; }
  const PciFunction* root_port() const;  // nullptr when integrated
};

// Classifies the root port. Heuristics (also in docs/doctor.md):
//  * Intel: on bus 0, device numbers 1a–1d are PCH (chipset) root ports; the
//    CPU's are 01 (PEG x16/x8) and 06 (x4) — any other Intel root port counts
//    as the CPU's.
//  * AMD (vendor 1022): every root port is the CPU's; the chipset hangs below
//    one of them as a PCIe switch (e.g. 600 Series 1022:43f4/43f5), so an
//    AMD bridge between the root port and the card means "chipset".
//  * A non-AMD, non-card bridge below a CPU root port is a PCIe switch.
RootPortVerdict classify_root_port(const std::vector<PathHop>& hops);

// Checks AtomicOps the way Linux's pci_enable_atomic_ops_to_root() does
// (drivers/pci/pci.c), which amdgpu calls asking for 32- and 64-bit completion:
// upstream and downstream switch ports must set AtomicOp Routing, the root port
// must complete 32- and 64-bit AtomicOps, and no upstream port may block them
// on egress. Other bridge types are not tested, as in the kernel.
AtomicsCheck check_atomics(const std::vector<PathHop>& hops);

// Builds the path: the upstream chain from the root port, then the GPU. The
// card's own bridges are those right above the GPU with the GPU's vendor id.
GpuPath analyze_gpu_path(PciChain chain);

}  // namespace switchyard::doctor
