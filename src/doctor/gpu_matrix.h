// The box's GPUs pair by pair, as `nvidia-smi topo -m` prints them: how each
// pair's traffic travels (same switch, one host bridge, the chipset, across
// host bridges), whether peer-to-peer and AtomicOps hold for the pair, and
// which number each GPU has in HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES and
// under /dev/dri. Pure functions over a BoxScan.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "doctor/box_scan.h"

namespace switchyard::doctor {

enum class PairPath {
  self,
  same_switch,  // below one bridge under a root port (nvidia-smi PIX/PXB)
  host_bridge,  // different root ports of one host bridge (PHB)
  chipset,      // one of them hangs off the chipset: the chipset link is on the way
  system,       // different host bridges (root buses): the CPU's interconnect (NODE/SYS)
};
const char* to_string(PairPath path);  // "X", "SW", "HB", "CS", "SYS"
const char* describe(PairPath path);   // "the same PCIe switch", …

// ok / no / unknown, with the evidence in words.
struct PairVerdict {
  std::optional<bool> ok;
  std::string why;
};

struct GpuPair {
  std::size_t a = 0, b = 0;  // indexes into BoxScan::gpus, a < b
  PairPath path = PairPath::host_bridge;
  PairVerdict peer_to_peer;  // KFD io_link flags when amdgpu is loaded
  PairVerdict atomics;       // both cards' paths to the CPU (what RCCL needs)
};

struct GpuIndex {
  std::string address;
  std::string runtime;       // "HIP" (AMD), "CUDA" (NVIDIA), "" (others)
  std::optional<int> index;  // the number in HIP_/CUDA_VISIBLE_DEVICES
  std::string order;         // how the index was derived, in words
  std::string render_node;   // "/dev/dri/renderD128", "" when none
};

struct GpuMatrix {
  std::vector<GpuIndex> gpus;  // in BoxScan::gpus order
  std::vector<GpuPair> pairs;  // every pair once
  const GpuPair* pair(std::size_t a, std::size_t b) const;
};

// HIP numbers AMD GPUs in KFD node order (PCI order without KFD); CUDA numbers
// NVIDIA GPUs in PCI order only with CUDA_DEVICE_ORDER=PCI_BUS_ID (its default
// puts the fastest first).
GpuMatrix gpu_matrix(const BoxScan& scan);

}  // namespace switchyard::doctor
