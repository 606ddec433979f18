#include "plan/gpu_cards.h"

#include <array>
#include <cctype>

namespace switchyard::plan {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

// Board memory from the vendors' specification pages; targets as doctor/gpu_models.cpp gives
// them (gfx1201 for Navi 48, gfx1100 for Navi 31).
constexpr std::array kCards{
    GpuCard{"r9700", "Radeon AI PRO R9700", GpuVendor::kAmd, "gfx1201", 32 * kGiB},
    GpuCard{"7900xtx", "Radeon RX 7900 XTX", GpuVendor::kAmd, "gfx1100", 24 * kGiB},
    GpuCard{"7900xt", "Radeon RX 7900 XT", GpuVendor::kAmd, "gfx1100", 20 * kGiB},
    GpuCard{"3090", "GeForce RTX 3090", GpuVendor::kNvidia, "", 24 * kGiB},
    GpuCard{"4090", "GeForce RTX 4090", GpuVendor::kNvidia, "", 24 * kGiB},
    GpuCard{"5090", "GeForce RTX 5090", GpuVendor::kNvidia, "", 32 * kGiB},
};

std::string normalised(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c != ' ' && c != '-' && c != '_') {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  for (std::string_view prefix : {"rtx", "rx"}) {
    if (out.starts_with(prefix)) out.erase(0, prefix.size());
  }
  return out;
}

}  // namespace

const GpuCard* find_gpu_card(std::string_view name) {
  const std::string key = normalised(name);
  for (const auto& card : kCards) {
    if (card.key == key) return &card;
  }
  return nullptr;
}

std::string gpu_card_names() {
  std::string out;
  for (const auto& card : kCards) out += (out.empty() ? "" : ", ") + std::string(card.key);
  return out;
}

}  // namespace switchyard::plan
