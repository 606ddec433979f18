#include "doctor/kfd_topology.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

namespace switchyard::doctor {
namespace fs = std::filesystem;
namespace {

// A KFD `properties` file: one "name value" pair per line.
std::map<std::string, std::uint64_t> read_properties(const fs::path& file) {
  std::map<std::string, std::uint64_t> props;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string name, value;
    if (!(words >> name >> value)) continue;
    char* end = nullptr;
    const std::uint64_t v = std::strtoull(value.c_str(), &end, 10);
    if (end != value.c_str()) props[name] = v;
  }
  return props;
}

std::uint64_t get(const std::map<std::string, std::uint64_t>& props, const char* name) {
  auto it = props.find(name);
  return it == props.end() ? 0 : it->second;
}

std::vector<std::pair<int, fs::path>> numbered_dirs(const fs::path& dir) {
  std::vector<std::pair<int, fs::path>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    found.emplace_back(std::atoi(name.c_str()), entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

const KfdNode* KfdTopology::node(int id) const {
  for (const auto& n : nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

const KfdNode* KfdTopology::gpu_at(const std::string& pci_address) const {
  for (const auto& n : nodes) {
    if (n.is_gpu && n.pci_address == pci_address) return &n;
  }
  return nullptr;
}

std::optional<bool> KfdTopology::atomics_enabled(const std::string& pci_address) const {
  const KfdNode* gpu = gpu_at(pci_address);
  if (!gpu) return std::nullopt;
  std::optional<bool> enabled;
  for (const auto& link : links) {
    if (link.node_from != gpu->id) continue;
    const KfdNode* to = node(link.node_to);
    if (!to || to->is_gpu) continue;
    enabled = enabled.value_or(true) && !link.no_atomics();
  }
  return enabled;
}

std::optional<KfdTopology> read_kfd_topology(const fs::path& root) {
  const fs::path nodes_dir = root / "class" / "kfd" / "kfd" / "topology" / "nodes";
  std::error_code ec;
  if (!fs::is_directory(nodes_dir, ec)) return std::nullopt;

  KfdTopology topology;
  for (const auto& [id, dir] : numbered_dirs(nodes_dir)) {
    const auto props = read_properties(dir / "properties");
    if (props.empty()) continue;
    KfdNode node;
    node.id = id;
    node.is_gpu = get(props, "simd_count") > 0;
    node.gfx_target_version = static_cast<std::uint32_t>(get(props, "gfx_target_version"));
    node.vendor_id = static_cast<std::uint16_t>(get(props, "vendor_id"));
    node.device_id = static_cast<std::uint16_t>(get(props, "device_id"));
    if (node.is_gpu) {
      // location_id is pci_dev_id(): bus << 8 | devfn (kfd_topology_add_device()).
      const auto location = get(props, "location_id");
      node.pci_address =
          fmt::format("{:04x}:{:02x}:{:02x}.{:x}", get(props, "domain"), (location >> 8) & 0xff,
                      (location >> 3) & 0x1f, location & 0x7);
    }
    topology.nodes.push_back(node);

    for (const auto& [link_id, link_dir] : numbered_dirs(dir / "io_links")) {
      const auto link_props = read_properties(link_dir / "properties");
      if (link_props.empty()) continue;
      KfdLink link;
      link.node_from = static_cast<int>(get(link_props, "node_from"));
      link.node_to = static_cast<int>(get(link_props, "node_to"));
      link.type = static_cast<std::uint32_t>(get(link_props, "type"));
      link.flags = static_cast<std::uint32_t>(get(link_props, "flags"));
      topology.links.push_back(link);
    }
  }
  return topology;
}

}  // namespace switchyard::doctor
