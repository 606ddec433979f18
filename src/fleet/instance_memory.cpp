#include "fleet/instance_memory.h"

#include <algorithm>
#include <charconv>
#include <set>

namespace switchyard::fleet {
namespace {

// Bytes `user` needs on card `gpu`; 0 when it does not use it.
std::uint64_t need_on(const MemoryUser& user, int gpu) {
  for (std::size_t i = 0; i < user.gpus.size() && i < user.per_gpu.size(); ++i) {
    if (user.gpus[i] == gpu) return user.per_gpu[i];
  }
  return 0;
}

}  // namespace

std::optional<std::vector<int>> parse_gpu_ids(std::string_view gpus) {
  std::vector<int> ids;
  if (gpus.empty()) return ids;
  for (std::size_t start = 0; start <= gpus.size();) {
    const std::size_t end = std::min(gpus.find(',', start), gpus.size());
    const std::string_view part = gpus.substr(start, end - start);
    int id = 0;
    const auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), id);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || id < 0) {
      return std::nullopt;
    }
    ids.push_back(id);
    start = end + 1;
  }
  return ids;
}

std::vector<MemoryClash> memory_clashes(const std::vector<MemoryUser>& users,
                                        const std::map<int, std::uint64_t>& cards) {
  std::vector<MemoryClash> clashes;
  std::set<std::size_t> too_big;
  for (std::size_t i = 0; i < users.size(); ++i) {
    for (const int gpu : users[i].gpus) {
      const auto card = cards.find(gpu);
      const std::uint64_t need = need_on(users[i], gpu);
      if (card == cards.end() || need <= card->second) continue;
      clashes.push_back({{users[i].name}, gpu, need, card->second});
      too_big.insert(i);
      break;
    }
  }
  for (std::size_t i = 0; i < users.size(); ++i) {
    for (std::size_t j = i + 1; j < users.size(); ++j) {
      if (too_big.count(i) || too_big.count(j)) continue;
      for (const int gpu : users[i].gpus) {
        const auto card = cards.find(gpu);
        const std::uint64_t need = need_on(users[i], gpu) + need_on(users[j], gpu);
        if (card == cards.end() || need_on(users[j], gpu) == 0 || need <= card->second) continue;
        clashes.push_back({{users[i].name, users[j].name}, gpu, need, card->second});
        break;
      }
    }
  }
  return clashes;
}

}  // namespace switchyard::fleet
