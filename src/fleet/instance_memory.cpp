#include "fleet/instance_memory.h"

#include <set>

namespace switchyard::fleet {
namespace {

// Bytes `user` needs on card `gpu`; 0 when it does not use it.
std::uint64_t need_on(const MemoryUser& user, const std::string& gpu) {
  for (std::size_t i = 0; i < user.gpus.size() && i < user.per_gpu.size(); ++i) {
    if (user.gpus[i] == gpu) return user.per_gpu[i];
  }
  return 0;
}

}  // namespace

std::vector<MemoryClash> memory_clashes(const std::vector<MemoryUser>& users,
                                        const std::map<std::string, std::uint64_t>& cards) {
  std::vector<MemoryClash> clashes;
  std::set<std::size_t> too_big;
  for (std::size_t i = 0; i < users.size(); ++i) {
    for (const auto& gpu : users[i].gpus) {
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
      for (const auto& gpu : users[i].gpus) {
        const auto card = cards.find(gpu);
        const std::uint64_t other = need_on(users[j], gpu);
        const std::uint64_t need = need_on(users[i], gpu) + other;
        if (card == cards.end() || other == 0 || need <= card->second) continue;
        clashes.push_back({{users[i].name, users[j].name}, gpu, need, card->second});
        break;
      }
    }
  }
  return clashes;
}

}  // namespace switchyard::fleet
