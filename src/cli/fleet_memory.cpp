#include "cli/fleet_memory.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fleet/config_check.h"
#include "plan/byte_size.h"

namespace switchyard::cli {
namespace {

std::string per_gpu_text(const std::vector<std::string>& ids,
                         const std::vector<std::uint64_t>& bytes) {
  std::string text;
  for (std::size_t i = 0; i < ids.size() && i < bytes.size(); ++i) {
    text += fmt::format("{}GPU {} {}", i ? ", " : "", ids[i],
                        plan::format_bytes(static_cast<double>(bytes[i])));
  }
  return text;
}

}  // namespace

Result<FleetMemory> estimate_fleet_memory(const config::FleetConfig& config,
                                          const std::map<std::string, std::uint64_t>& cards) {
  FleetMemory out;
  std::vector<fleet::MemoryUser> users;
  for (std::size_t i = 0; i < config.instances.size(); ++i) {
    const auto& inst = config.instances[i];
    const auto ids = inst.gpu_ids();
    if (ids.empty()) continue;
    if (inst.memory) {  // declared: no estimate, but it counts for the clashes
      out.lines.push_back(fmt::format("memory of {}: {} per GPU, declared (instances[{}].memory)",
                                      inst.name, plan::format_bytes(double(*inst.memory)), i));
      users.push_back({inst.name, ids, std::vector<std::uint64_t>(ids.size(), *inst.memory)});
      continue;
    }
    if (!inst.command) continue;
    std::vector<std::uint64_t> card_bytes;
    for (const auto& id : ids) {
      const auto card = cards.find(id);
      card_bytes.push_back(card == cards.end() ? 0 : card->second);
    }
    auto estimate = plan::estimate_command_memory(fleet::command_words(*inst.command), card_bytes);
    if (!estimate) {
      out.lines.push_back(fmt::format("memory of {}: unknown ({}); declare instances[{}].memory",
                                      inst.name, estimate.error().message, i));
      continue;
    }
    out.lines.push_back(fmt::format("memory of {}: {}, by {}", inst.name,
                                    per_gpu_text(ids, estimate->per_gpu), estimate->source));
    users.push_back({inst.name, ids, estimate->per_gpu});
    out.estimates[inst.name] = std::move(*estimate);
  }
  out.clashes = fleet::memory_clashes(users, cards);
  for (const auto& clash : out.clashes) {
    if (clash.instances.size() > 1) continue;
    for (std::size_t i = 0; i < config.instances.size(); ++i) {
      if (config.instances[i].name != clash.instances.front()) continue;
      return Error{
          fmt::format("{}: instances[{}].command: {}; lower its -c/-np/-ngl or give it more GPUs",
                      config.source, i, clash_text(clash))};
    }
  }
  return out;
}

std::string clash_text(const fleet::MemoryClash& clash) {
  const auto have = plan::format_bytes(static_cast<double>(clash.have));
  const auto need = plan::format_bytes(static_cast<double>(clash.need));
  if (clash.instances.size() == 1) {
    return fmt::format("GPU {} ({}) cannot hold {}: it needs {}", clash.gpu, have,
                       clash.instances.front(), need);
  }
  return fmt::format("GPU {} ({}) cannot hold {} together: they need {}", clash.gpu, have,
                     fmt::join(clash.instances, " and "), need);
}

config::MemoryEstimates handover(const FleetMemory& memory) {
  config::MemoryEstimates out;
  for (const auto& [name, estimate] : memory.estimates) {
    std::uint64_t most = 0;
    for (const auto bytes : estimate.per_gpu) most = std::max(most, bytes);
    out[name] = {most, estimate.source};
  }
  return out;
}

std::map<std::string, std::uint64_t> card_memory(const config::FleetConfig& config) {
  std::map<std::string, std::uint64_t> cards;
  for (const auto& gpu : config.gpus) {
    if (gpu.memory > 0) cards[gpu.id] = gpu.memory;
  }
  return cards;
}

std::optional<std::string> adopt_box_cards(config::FleetConfig& config,
                                           const std::vector<doctor::CardMemory>& box) {
  if (!config.gpus.empty()) return std::nullopt;
  std::set<std::string> named;
  for (const auto& inst : config.instances)
    for (auto& id : inst.gpu_ids()) named.insert(std::move(id));
  if (named.empty()) return std::nullopt;
  if (box.empty())
    return "no 'gpus' declared, and no card's memory could be read from the box (sysfs, "
           "nvidia-smi)";
  for (const auto& id : named) {
    if (std::none_of(box.begin(), box.end(), [&](const auto& c) { return c.id == id; }))
      return fmt::format(
          "no 'gpus' declared; the box's {} card(s) are not used: instances name GPU {}",
          box.size(), id);
  }
  std::vector<std::string> read;
  for (const auto& card : box) {
    config.gpus.push_back({card.id, card.bytes});
    read.push_back(fmt::format("GPU {} {} ({})", card.id,
                               plan::format_bytes(static_cast<double>(card.bytes)), card.source));
  }
  return fmt::format("no 'gpus' declared: the cards as read from the box: {}",
                     fmt::join(read, ", "));
}

Result<FleetMemory> serve_memory(config::FleetConfig& config,
                                 const std::filesystem::path& sys_root) {
  const auto adopted = config.gpus.empty()
                           ? adopt_box_cards(config, doctor::read_card_memory(sys_root))
                           : std::nullopt;
  auto memory = estimate_fleet_memory(config, card_memory(config));
  if (memory && adopted) memory->lines.insert(memory->lines.begin(), *adopted);
  return memory;
}

}  // namespace switchyard::cli
