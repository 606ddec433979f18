#include "doctor/box_verdicts.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "doctor/pcie_link.h"

namespace switchyard::doctor {
namespace {

constexpr std::uint16_t vendor_amd_gpu = 0x1002;

// Why tensor parallel dies on such a path: RCCL's kernels declare a hostcall
// buffer whose doorbell is a PCIe atomic write, and HIP refuses to launch them
// on a device without atomics to the host (ROCm/legacy-rocm-build#6520; the
// open fix proposal is ROCm/rocm-systems#11277). Field report 000: vLLM TP2
// failed with this error, always on the chipset-attached card.
constexpr const char* tp_consequence =
    "ROCm tensor parallel across it will fail at the first collective (HIP error 401, "
    "hipErrorIllegalState: RCCL's kernels carry a hostcall buffer whose doorbell is a PCIe "
    "atomic write; ROCm/legacy-rocm-build#6520). Run one instance per card, or llama.cpp's "
    "--split-mode layer (vLLM's pipeline parallel runs RCCL collectives too).";

constexpr const char* single_gpu_consequence =
    "ROCm kernels that need a hostcall (printf, RCCL collectives) are refused on it (HIP error "
    "401, hipErrorIllegalState); a single-card instance without them runs fine.";

bool is_discrete(const ScannedGpu& gpu) {
  return gpu.path.root_port() != nullptr;
}

std::string role_name(HopRole role, Attachment attachment) {
  switch (role) {
    case HopRole::root_port:
      return attachment == Attachment::chipset
                 ? "chipset root port"
                 : (attachment == Attachment::cpu ? "CPU root port" : "root port");
    case HopRole::platform_bridge:
      return "bridge";
    case HopRole::card_bridge:
      return "the card's switch port";
    case HopRole::gpu:
      return "the GPU";
  }
  return "port";
}

std::string join(const std::vector<std::string>& parts, const std::string& last_sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += (i + 1 == parts.size()) ? last_sep : ", ";
    out += parts[i];
  }
  return out;
}

void judge_atomics(const ScannedGpu& gpu, const BoxScan& scan, bool multi_amd,
                   std::vector<Finding>& out) {
  const GpuPath& path = gpu.path;
  const std::string& address = path.gpu().address;
  const Severity severity = multi_amd ? Severity::warning : Severity::note;
  const std::string consequence = multi_amd ? tp_consequence : single_gpu_consequence;
  const std::optional<bool> kfd = scan.kfd ? scan.kfd->atomics_enabled(address) : std::nullopt;
  const std::string kfd_agrees =
      kfd == false
          ? " The amdgpu driver agrees: KFD marks this GPU's links to the CPU \"no atomics\"."
          : "";

  switch (path.atomics.state) {
    case AtomicsState::missing: {
      std::string message;
      if (path.atomics.root_port_completes == false) {
        message = fmt::format(
            "GPU {} sits behind {} {}, which has no AtomicOp completer (AtomicOpsCap: {}; "
            "read-only bits that setpci cannot change): {}",
            address, role_name(HopRole::root_port, path.root.attachment), path.root_port()->address,
            path.atomics.root_port_bits, consequence);
      } else {
        message = fmt::format("GPU {} cannot use PCIe AtomicOps: {}. {}", address,
                              join(path.atomics.failures, "; "), consequence);
      }
      out.push_back({severity, "pcie.atomics", address, message + kfd_agrees});
      break;
    }
    case AtomicsState::unchecked:
      if (kfd == false) {
        out.push_back({severity, "pcie.atomics", address,
                       fmt::format("The amdgpu driver disabled PCIe atomics for GPU {} (KFD marks "
                                   "its links to the CPU \"no atomics\"): {} Which bridge lacks "
                                   "them needs config space beyond 64 bytes: rerun as root "
                                   "(sudo switchyard doctor) to see.",
                                   address, consequence)});
      } else if (kfd == true) {
        out.push_back({Severity::note, "pcie.atomics", address,
                       fmt::format("Could not read the PCIe capability of {} (only 64 bytes of "
                                   "config space are readable without root), but the amdgpu "
                                   "driver enabled PCIe atomics for GPU {} (KFD io_link flags), so "
                                   "its path supports them.",
                                   join(path.atomics.unreadable, " and "), address)});
      } else {
        out.push_back(
            {severity, "pcie.atomics", address,
             fmt::format("Could not check PCIe AtomicOps for GPU {}: the PCIe capability of {} "
                         "lies beyond the first 64 bytes of config space, which is all a "
                         "non-root user may read. Unchecked: AtomicOp routing on the switch "
                         "ports and 32/64-bit AtomicOp completion at the root port, which ROCm "
                         "tensor parallel needs. Rerun as root (sudo switchyard doctor) to check "
                         "them.",
                         address, join(path.atomics.unreadable, " and "))});
      }
      break;
    case AtomicsState::ok:
      if (kfd == false) {
        out.push_back({severity, "pcie.atomics", address,
                       fmt::format("Every hop to GPU {} supports PCIe AtomicOps, yet the amdgpu "
                                   "driver disabled them (KFD marks its links to the CPU \"no "
                                   "atomics\"): {}",
                                   address, consequence)});
      }
      break;
    case AtomicsState::not_applicable:
      break;
  }
}

void judge_link(const ScannedGpu& gpu, bool multi_gpu, std::vector<Finding>& out) {
  const GpuPath& path = gpu.path;
  if (!path.narrowest || !path.card_max) return;
  const std::string& address = path.gpu().address;
  const LinkSpeed now = path.narrowest->current;
  const LinkSpeed card = *path.card_max;
  if (now.gbytes_per_s() >= card.gbytes_per_s() * 0.99) return;

  const auto& port = path.narrowest->port_max;
  const std::string where =
      role_name(path.narrowest->role, path.root.attachment) + " " + path.narrowest->address;
  const bool at_port_max = port && now.gts >= port->gts - 1e-6 && now.width >= port->width;
  const bool width_short = port && now.width < port->width;
  const bool speed_short_only = port && !width_short && now.gts < port->gts - 1e-6;

  if (speed_short_only) {
    out.push_back({Severity::note, "pcie.link", address,
                   fmt::format("GPU {}'s path is running at {} though {} supports {:.1f} GT/s: "
                               "GPUs lower the link speed when idle, so rerun doctor under load; "
                               "if it stays low, check the BIOS PCIe generation setting and any "
                               "riser.",
                               address, describe_link(now.gts, now.width), where, port->gts)});
    return;
  }

  const Severity severity =
      now.gbytes_per_s() < card.gbytes_per_s() * 0.5 - 1e-6 ? Severity::warning : Severity::note;
  std::string message =
      fmt::format("GPU {}'s path trained at {} though the card is capable of {}", address,
                  describe_link(now.gts, now.width), describe_link(card.gts, card.width));
  const double share = now.gbytes_per_s() / card.gbytes_per_s() * 100;
  if (!multi_gpu) {
    message += ": loading weights and anything offloaded to the CPU run at this speed.";
  } else if (severity == Severity::warning) {
    message += ": cross-card traffic will dominate a split.";
  } else {
    message += fmt::format(
        ": a split's cross-card traffic gets {:.0f}% of what the card could carry.", share);
  }
  if (at_port_max) {
    message += fmt::format(
        " The narrowest link is at {}, which itself tops out at {}: a slot "
        "limit, not a bad contact.",
        where, describe_link(port->gts, port->width));
  } else if (width_short) {
    message += fmt::format(
        " {} trained x{} though it supports x{}: reseat the card, check any "
        "riser, and check whether the board shares this slot's lanes with "
        "M.2 slots (BIOS bifurcation settings).",
        where, now.width, port->width);
  }
  out.push_back({severity, "pcie.link", address, message});
}

void judge_peer_to_peer(const BoxScan& scan, std::vector<Finding>& out) {
  std::vector<const ScannedGpu*> discrete;
  for (const auto& gpu : scan.gpus) {
    if (is_discrete(gpu)) discrete.push_back(&gpu);
  }
  if (discrete.size() < 2) return;

  std::set<std::string> root_ports;
  bool any_chipset = false;
  std::vector<std::string> placement;
  for (const ScannedGpu* gpu : discrete) {
    root_ports.insert(gpu->path.root_port()->address);
    any_chipset = any_chipset || gpu->path.root.attachment == Attachment::chipset;
    placement.push_back(fmt::format("{} under {} {}", gpu->path.gpu().address,
                                    role_name(HopRole::root_port, gpu->path.root.attachment),
                                    gpu->path.root_port()->address));
  }
  if (any_chipset && root_ports.size() > 1) {
    out.push_back({Severity::note, "pcie.p2p", "box",
                   fmt::format("The GPUs hang off different root ports ({}): there is no direct "
                               "peer-to-peer path between the chipset-attached card and the "
                               "others, so cross-card traffic bounces through system memory and "
                               "the chipset's uplink.",
                               join(placement, " and "))});
  }

  if (!scan.kfd) return;
  std::set<std::pair<std::string, std::string>> seen;
  for (const auto& link : scan.kfd->links) {
    const KfdNode* from = scan.kfd->node(link.node_from);
    const KfdNode* to = scan.kfd->node(link.node_to);
    if (!from || !to || !from->is_gpu || !to->is_gpu || !link.no_peer_to_peer()) continue;
    auto pair = std::minmax(from->pci_address, to->pci_address);
    if (!seen.insert({pair.first, pair.second}).second) continue;
    out.push_back({Severity::note, "pcie.p2p", pair.first,
                   fmt::format("KFD reports no peer-to-peer DMA between GPU {} and GPU {}: copies "
                               "between them go through system memory.",
                               pair.first, pair.second)});
  }
}

void judge_known_issues(const BoxScan& scan, std::vector<Finding>& out) {
  std::map<std::string, std::vector<const ScannedGpu*>> by_gfx;
  for (const auto& gpu : scan.gpus) {
    if (is_discrete(gpu) && !gpu.gfx.empty()) by_gfx[gpu.gfx].push_back(&gpu);
  }
  for (const auto& [gfx, gpus] : by_gfx) {
    for (const KnownIssue* issue : known_issues_for(gfx)) {
      if (static_cast<int>(gpus.size()) < issue->min_gpus) continue;
      std::vector<std::string> addresses;
      for (const ScannedGpu* gpu : gpus) addresses.push_back(gpu->path.gpu().address);
      const std::string model = gpus.front()->model ? std::string(gpus.front()->model->name) : gfx;
      out.push_back({Severity::note, "known." + std::string(issue->id), join(addresses, " and "),
                     fmt::format("{} {} GPUs ({}; {}): {}. Instead, {}. Tracked in {}.",
                                 gpus.size(), gfx, model, join(addresses, " and "), issue->summary,
                                 issue->advice, issue->sources)});
    }
  }
}

}  // namespace

std::vector<Finding> judge_box(const BoxScan& scan) {
  std::vector<Finding> out;
  if (!scan.pci_visible) {
    out.push_back({Severity::note, "box.no_pci", "box",
                   fmt::format("No PCI bus is visible under {} (a container, or a VM without PCI "
                               "passthrough?): the box checks were skipped.",
                               (scan.root / "bus" / "pci" / "devices").string())});
    return out;
  }
  for (const auto& error : scan.read_errors) {
    out.push_back(
        {Severity::note, "box.read_error", "box", "Could not read a PCI device: " + error});
  }
  if (scan.gpus.empty()) {
    out.push_back({Severity::note, "box.no_gpu", "box",
                   "No GPU found on the PCI bus (looked for display, 3D and accelerator functions "
                   "from AMD, NVIDIA and Intel): nothing on the box to check."});
    return out;
  }

  const auto discrete = std::count_if(scan.gpus.begin(), scan.gpus.end(), is_discrete);
  const auto amd_discrete =
      std::count_if(scan.gpus.begin(), scan.gpus.end(), [](const ScannedGpu& g) {
        return is_discrete(g) && g.path.gpu().vendor_id == vendor_amd_gpu;
      });

  for (const auto& gpu : scan.gpus) {
    if (!is_discrete(gpu)) {
      out.push_back({Severity::note, "pcie.integrated", gpu.path.gpu().address,
                     fmt::format("GPU {} is integrated (on the root bus, no PCIe link): left out "
                                 "of the link and atomics checks.",
                                 gpu.path.gpu().address)});
      continue;
    }
    // Only ROCm needs PCIe AtomicOps to the host; CUDA and Level Zero do not.
    if (gpu.path.gpu().vendor_id == vendor_amd_gpu)
      judge_atomics(gpu, scan, amd_discrete >= 2, out);
    judge_link(gpu, discrete >= 2, out);
  }
  judge_peer_to_peer(scan, out);
  judge_known_issues(scan, out);
  return out;
}

}  // namespace switchyard::doctor
