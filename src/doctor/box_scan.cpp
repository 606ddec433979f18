#include "doctor/box_scan.h"

#include <system_error>

namespace switchyard::doctor {
namespace fs = std::filesystem;

namespace {

void read_drm_nodes(const fs::path& dir, ScannedGpu& gpu) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir / "drm", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("renderD")) gpu.render_node = name;
    if (name.starts_with("card") && name.find('-') == std::string::npos) gpu.card_node = name;
  }
}

}  // namespace

Result<BoxScan> scan_box(const fs::path& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return Error{root.string() + " is not a directory"};

  BoxScan scan;
  scan.root = root;
  scan.kfd = read_kfd_topology(root);
  auto addresses = list_pci_addresses(root);
  if (!addresses) return scan;
  scan.pci_visible = true;

  for (const auto& address : *addresses) {
    auto function = read_pci_function(root / "bus" / "pci" / "devices" / address);
    if (!function) {
      scan.read_errors.push_back(function.error().message);
      continue;
    }
    if (!is_gpu(*function)) continue;
    auto chain = read_pci_chain(root, address);
    if (!chain) {
      scan.read_errors.push_back(chain.error().message);
      continue;
    }
    ScannedGpu gpu;
    const fs::path dir = chain->device.dir;
    gpu.path = analyze_gpu_path(std::move(chain.value()));
    gpu.model = find_gpu_model(gpu.path.gpu().vendor_id, gpu.path.gpu().device_id);
    if (gpu.model) gpu.gfx = std::string(gpu.model->gfx);
    if (gpu.gfx.empty() && scan.kfd) {
      if (const KfdNode* node = scan.kfd->gpu_at(address))
        gpu.gfx = gfx_name(node->gfx_target_version);
    }
    gpu.sensors = read_gpu_sensors(dir);
    read_drm_nodes(dir, gpu);
    scan.gpus.push_back(std::move(gpu));
  }
  return scan;
}

}  // namespace switchyard::doctor
