#include "doctor/gpu_models.h"

#include <fmt/format.h>

#include <array>

namespace switchyard::doctor {
namespace {

// Sources for the ids (looked up, not remembered):
//  * 1002:744c — `lspci -nn`: "Navi 31 [Radeon RX 7900 XT/7900 XTX] [1002:744c]"
//    (clbr/radeontop#159); LACT reports it as "AMD Radeon RX 7900 XTX
//    (0x1002:0x744C)", "GFX1100/Navi31" (ilya-zlobintsev/LACT#533). The field
//    report's card is "0x744c / gfx1100".
//  * 1002:7551 — `lspci -vnn`: "Navi 48 [Radeon AI PRO R9700] [1002:7551]"
//    (clbr/radeontop#184); gfx1201 per ROCm/rocm-systems#5480 and the field report.
constexpr std::array models{
    GpuModel{0x1002, 0x744c, "Radeon RX 7900 XT / 7900 XTX / 7900 GRE (Navi 31)", "gfx1100"},
    GpuModel{0x1002, 0x7551, "Radeon AI PRO R9700 (Navi 48)", "gfx1201"},
};

constexpr std::array issues{
    // Field report 003: vLLM TP/PP on two R9700s dies at the first collective
    // kernel enqueue whatever the transport settings (P2P, SHM, SDMA, IOMMU),
    // bare metal as well as in a VM. Upstream: vllm-project/vllm#40980 "TP=2
    // deadlock on dual AMD R9700 (gfx1201/RDNA4)" (also seen with tp=4 on
    // 4x R9700) and ROCm/rocm-systems#5480 "RCCL deadlock during vLLM TP=2
    // inference on dual R9700 (gfx1201/RDNA4)", a regression between RCCL
    // 2.27.3 and 2.27.7; both open when checked.
    KnownIssue{
        "vllm-tp-gfx1201",
        "gfx1201",
        2,
        "vLLM tensor or pipeline parallel across gfx1201 (RDNA4) cards hangs or fails at the "
        "first collective (RCCL), whatever the P2P/SHM/SDMA settings",
        "run one instance per card, or llama.cpp's --split-mode layer when a model does not fit "
        "one card",
        "vllm-project/vllm#40980, ROCm/rocm-systems#5480",
    },
};

}  // namespace

const GpuModel* find_gpu_model(std::uint16_t vendor_id, std::uint16_t device_id) {
  for (const auto& model : models) {
    if (model.vendor_id == vendor_id && model.device_id == device_id) return &model;
  }
  return nullptr;
}

std::string gfx_name(std::uint32_t v) {
  if (v == 0) return "";
  return fmt::format("gfx{}{:x}{:x}", v / 10000, (v / 100) % 100, v % 100);
}

std::vector<const KnownIssue*> known_issues_for(std::string_view gfx) {
  std::vector<const KnownIssue*> found;
  for (const auto& issue : issues) {
    if (!gfx.empty() && issue.gfx == gfx) found.push_back(&issue);
  }
  return found;
}

}  // namespace switchyard::doctor
