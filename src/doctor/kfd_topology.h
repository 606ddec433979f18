// The AMD KFD topology under `<root>/class/kfd/kfd/topology/nodes`: which GPU
// nodes exist and what the driver decided about their links. Readable without
// root, it answers the atomics question even when config space is not: amdgpu
// marks a GPU's links "no atomics" when pci_enable_atomic_ops_to_root() failed
// (kfd_set_iolink_no_atomics() in drivers/gpu/drm/amd/amdkfd/kfd_topology.c).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace switchyard::doctor {

// io_link flag bits, CRAT_IOLINK_FLAGS_* in drivers/gpu/drm/amd/amdkfd/kfd_crat.h.
namespace kfd_link_flag {
inline constexpr std::uint32_t enabled = 1u << 0;
inline constexpr std::uint32_t no_atomics_32 = 1u << 2;
inline constexpr std::uint32_t no_atomics_64 = 1u << 3;
inline constexpr std::uint32_t no_peer_to_peer = 1u << 4;
}  // namespace kfd_link_flag

// io_link types, CRAT_IOLINK_TYPE_* in kfd_crat.h.
inline constexpr std::uint32_t kfd_link_type_pcie = 2;
inline constexpr std::uint32_t kfd_link_type_xgmi = 11;

struct KfdNode {
  int id = 0;
  bool is_gpu = false;  // simd_count > 0; CPU nodes have none
  std::uint32_t gfx_target_version = 0;
  std::uint16_t vendor_id = 0;
  std::uint16_t device_id = 0;
  std::string pci_address;  // from domain and location_id; "" for CPU nodes
};

struct KfdLink {
  int node_from = 0;
  int node_to = 0;
  std::uint32_t type = 0;
  std::uint32_t flags = 0;

  bool no_atomics() const {
    return flags & (kfd_link_flag::no_atomics_32 | kfd_link_flag::no_atomics_64);
  }
  bool no_peer_to_peer() const { return flags & kfd_link_flag::no_peer_to_peer; }
};

struct KfdTopology {
  std::vector<KfdNode> nodes;
  std::vector<KfdLink> links;

  const KfdNode* node(int id) const;
  const KfdNode* gpu_at(const std::string& pci_address) const;
  // Whether amdgpu enabled PCIe atomics for the GPU at `pci_address`, judged by
  // its links to CPU nodes; nullopt when the GPU or such a link is not listed.
  std::optional<bool> atomics_enabled(const std::string& pci_address) const;
};

// nullopt when the topology directory does not exist (no amdgpu/KFD loaded).
// Unreadable nodes or links are skipped: this is corroborating evidence.
std::optional<KfdTopology> read_kfd_topology(const std::filesystem::path& root);

}  // namespace switchyard::doctor
