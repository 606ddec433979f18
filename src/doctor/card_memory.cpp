#include "doctor/card_memory.h"

#include <charconv>

#include "doctor/kfd_topology.h"
#include "doctor/nvidia_smi.h"
#include "doctor/sysfs_pci.h"

namespace switchyard::doctor {
namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

bool parse_whole(std::string_view s, std::uint64_t& out) {
  s = trimmed(s);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

}  // namespace

std::vector<CardMemory> read_amd_card_memory(const std::filesystem::path& root) {
  std::vector<CardMemory> cards;
  const auto topology = read_kfd_topology(root);
  if (!topology) return cards;
  for (const auto& node : topology->nodes) {
    if (!node.is_gpu) continue;
    const auto file = root / "bus" / "pci" / "devices" / node.pci_address / "mem_info_vram_total";
    const auto text = read_first_line(file);
    std::uint64_t bytes = 0;
    if (!text || !parse_whole(*text, bytes) || bytes == 0) break;
    cards.push_back({std::to_string(cards.size()), bytes, file.string()});
  }
  return cards;
}

std::vector<CardMemory> parse_nvidia_card_memory(std::string_view csv) {
  std::vector<CardMemory> cards;
  while (!csv.empty()) {
    const auto end = csv.find('\n');
    const auto line = trimmed(csv.substr(0, end));
    csv = end == std::string_view::npos ? std::string_view() : csv.substr(end + 1);
    if (line.empty()) continue;
    const auto comma = line.find(',');
    std::uint64_t index = 0, mib = 0;
    if (comma == std::string_view::npos || !parse_whole(line.substr(0, comma), index) ||
        !parse_whole(line.substr(comma + 1), mib) || index != cards.size())
      return {};
    cards.push_back({std::to_string(index), mib * 1024 * 1024, "nvidia-smi memory.total"});
  }
  return cards;
}

std::vector<CardMemory> read_card_memory(const std::filesystem::path& root) {
  auto cards = read_amd_card_memory(root);
  if (!cards.empty() || !nvidia_smi_available()) return cards;
  const auto run = run_nvidia_smi("--query-gpu=index,memory.total --format=csv,noheader,nounits");
  if (!run || run->status != 0) return cards;
  return parse_nvidia_card_memory(run->output);
}

}  // namespace switchyard::doctor
