// Everything doctor reads about the box itself, from a sysfs tree: every GPU's
// path, its sensors and model, and the KFD topology when amdgpu is loaded.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "doctor/gpu_models.h"
#include "doctor/gpu_sensors.h"
#include "doctor/kfd_topology.h"
#include "doctor/pci_topology.h"

namespace switchyard::doctor {

struct ScannedGpu {
  GpuPath path;
  const GpuModel* model = nullptr;  // nullptr for ids doctor does not know
  std::string gfx;                  // from the model table, else from KFD; may be ""
  std::optional<GpuSensors> sensors;
  // The DRM nodes the kernel made for it (`drm/` in its sysfs directory): "renderD128", "card0";
  // "" when it has none (no driver bound).
  std::string render_node;
  std::string card_node;
};

struct BoxScan {
  std::filesystem::path root;    // what stands in for /sys
  bool pci_visible = false;      // <root>/bus/pci/devices exists
  std::vector<ScannedGpu> gpus;  // in PCI address order
  std::optional<KfdTopology> kfd;
  std::vector<std::string> read_errors;  // devices that could not be read, one line each
};

// An Error only when `root` is not a directory: a missing PCI bus or an
// unreadable device is reported inside the scan, not as a failure.
Result<BoxScan> scan_box(const std::filesystem::path& root);

}  // namespace switchyard::doctor
