#include "doctor/gpu_matrix.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <tuple>

namespace switchyard::doctor {
namespace {

constexpr std::uint16_t vendor_amd = 0x1002;
constexpr std::uint16_t vendor_nvidia = 0x10de;

// "0000:00" of root port 0000:00:01.0: the root bus, one per host bridge.
std::string root_bus(const GpuPath& path) {
  const PciFunction& top = path.root_port() ? *path.root_port() : path.gpu();
  return top.address.substr(0, top.address.rfind(':'));
}

PairPath classify(const GpuPath& a, const GpuPath& b) {
  if (root_bus(a) != root_bus(b)) return PairPath::system;
  if (a.root.attachment == Attachment::chipset || b.root.attachment == Attachment::chipset) {
    // Two cards behind the same chipset switch still meet there, below the chipset link.
    const bool both = a.root.attachment == b.root.attachment && a.root_port() && b.root_port() &&
                      a.root_port()->address == b.root_port()->address;
    if (!both) return PairPath::chipset;
  }
  if (a.root_port() && b.root_port() && a.root_port()->address == b.root_port()->address)
    return PairPath::same_switch;
  return PairPath::host_bridge;
}

PairVerdict peer_to_peer(const ScannedGpu& a, const ScannedGpu& b, PairPath path,
                         const BoxScan& scan) {
  const KfdNode* na = scan.kfd ? scan.kfd->gpu_at(a.path.gpu().address) : nullptr;
  const KfdNode* nb = scan.kfd ? scan.kfd->gpu_at(b.path.gpu().address) : nullptr;
  if (na && nb) {
    for (const auto& link : scan.kfd->links) {
      if (link.node_from != na->id || link.node_to != nb->id) continue;
      if (link.no_peer_to_peer())
        return {false, "amdgpu marks the KFD link between them \"no peer-to-peer\""};
      return {true, link.type == kfd_link_type_xgmi ? "XGMI link (KFD)"
                                                    : "KFD lists a peer-to-peer PCIe link"};
    }
    return {false, "KFD lists no link between them: HIP copies go through host memory"};
  }
  if (path == PairPath::chipset)
    return {false, "the chipset does not forward peer-to-peer traffic to the CPU's root ports"};
  if (a.path.gpu().vendor_id == vendor_nvidia && b.path.gpu().vendor_id == vendor_nvidia)
    return {std::nullopt, "nvidia-smi topo -p2p r answers it"};
  return {std::nullopt, "no KFD topology to read it from (amdgpu not loaded)"};
}

PairVerdict atomics(const ScannedGpu& a, const ScannedGpu& b, const BoxScan& scan) {
  if (a.path.gpu().vendor_id != vendor_amd || b.path.gpu().vendor_id != vendor_amd)
    return {std::nullopt, "only ROCm needs them"};
  std::vector<std::string> missing, unchecked;
  for (const ScannedGpu* g : {&a, &b}) {
    const std::string& address = g->path.gpu().address;
    const std::optional<bool> kfd = scan.kfd ? scan.kfd->atomics_enabled(address) : std::nullopt;
    const AtomicsState state = g->path.atomics.state;
    if (state == AtomicsState::missing || kfd == false)
      missing.push_back(address);
    else if (state == AtomicsState::unchecked && kfd != true)
      unchecked.push_back(address);
  }
  if (!missing.empty())
    return {false, fmt::format("no AtomicOps to the CPU for {}: ROCm tensor parallel over this "
                               "pair fails at its first collective",
                               fmt::join(missing, " and "))};
  if (!unchecked.empty())
    return {std::nullopt,
            fmt::format("unchecked for {} (rerun as root)", fmt::join(unchecked, " and "))};
  return {true, "both cards complete AtomicOps to the CPU"};
}

}  // namespace

const char* to_string(PairPath path) {
  switch (path) {
    case PairPath::self:
      return "X";
    case PairPath::same_switch:
      return "SW";
    case PairPath::host_bridge:
      return "HB";
    case PairPath::chipset:
      return "CS";
    case PairPath::system:
      return "SYS";
  }
  return "?";
}

const char* describe(PairPath path) {
  switch (path) {
    case PairPath::self:
      return "itself";
    case PairPath::same_switch:
      return "below one root port (the same PCIe switch)";
    case PairPath::host_bridge:
      return "across root ports of one host bridge";
    case PairPath::chipset:
      return "through the chipset and its link to the CPU";
    case PairPath::system:
      return "across host bridges (the CPU's interconnect)";
  }
  return "?";
}

const GpuPair* GpuMatrix::pair(std::size_t a, std::size_t b) const {
  if (a > b) std::swap(a, b);
  for (const auto& p : pairs)
    if (p.a == a && p.b == b) return &p;
  return nullptr;
}

GpuMatrix gpu_matrix(const BoxScan& scan) {
  GpuMatrix m;
  // HIP's order is KFD's GPU node order; without KFD, PCI order (as amdgpu probes).
  // (not listed by KFD, KFD node id or scan order, scan index): listed nodes first, by id.
  std::vector<std::tuple<bool, int, std::size_t>> amd;
  std::vector<std::size_t> nvidia;
  for (std::size_t i = 0; i < scan.gpus.size(); ++i) {
    const ScannedGpu& g = scan.gpus[i];
    GpuIndex index;
    index.address = g.path.gpu().address;
    if (!g.render_node.empty()) index.render_node = "/dev/dri/" + g.render_node;
    if (g.path.gpu().vendor_id == vendor_amd) {
      const KfdNode* node = scan.kfd ? scan.kfd->gpu_at(index.address) : nullptr;
      amd.emplace_back(node == nullptr, node ? node->id : static_cast<int>(i), i);
      index.runtime = "HIP";
    } else if (g.path.gpu().vendor_id == vendor_nvidia) {
      nvidia.push_back(i);
      index.runtime = "CUDA";
    }
    m.gpus.push_back(std::move(index));
  }
  std::sort(amd.begin(), amd.end());
  for (std::size_t n = 0; n < amd.size(); ++n) {
    GpuIndex& g = m.gpus[std::get<2>(amd[n])];
    const bool listed = scan.kfd && scan.kfd->gpu_at(g.address);
    g.index = static_cast<int>(n);
    g.order = listed ? "KFD node order" : "PCI order (no KFD topology to confirm)";
  }
  for (std::size_t n = 0; n < nvidia.size(); ++n) {
    m.gpus[nvidia[n]].index = static_cast<int>(n);
    m.gpus[nvidia[n]].order = "PCI order, with CUDA_DEVICE_ORDER=PCI_BUS_ID";
  }
  for (std::size_t a = 0; a < scan.gpus.size(); ++a) {
    for (std::size_t b = a + 1; b < scan.gpus.size(); ++b) {
      GpuPair p;
      p.a = a;
      p.b = b;
      p.path = classify(scan.gpus[a].path, scan.gpus[b].path);
      p.peer_to_peer = peer_to_peer(scan.gpus[a], scan.gpus[b], p.path, scan);
      p.atomics = atomics(scan.gpus[a], scan.gpus[b], scan);
      m.pairs.push_back(std::move(p));
    }
  }
  return m;
}

}  // namespace switchyard::doctor
