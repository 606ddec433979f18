#include "profiles/eviction.h"

#include <algorithm>
#include <tuple>

namespace switchyard::profiles {

namespace {

bool on_gpu(const Resident& r, const std::string& gpu) {
  return std::find(r.gpus.begin(), r.gpus.end(), gpu) != r.gpus.end();
}

bool shares_gpu(const Resident& a, const Resident& b) {
  return std::any_of(a.gpus.begin(), a.gpus.end(),
                     [&](const std::string& g) { return on_gpu(b, g); });
}

bool excluded(const std::vector<std::size_t>& without, std::size_t index) {
  return std::find(without.begin(), without.end(), index) != without.end();
}

// The most candidates searched exhaustively (2^16 sets); beyond, the
// costliest are left out of the choice.
constexpr std::size_t kMaxCandidates = 16;

}  // namespace

std::map<std::string, std::uint64_t> memory_in_use(const std::vector<Resident>& all) {
  std::map<std::string, std::uint64_t> used;
  for (const auto& r : all)
    if (r.present && r.memory)
      for (const auto& g : r.gpus) used[g] += *r.memory;
  return used;
}

bool fits(const std::vector<Resident>& all, const Resident& want, const GpuMemory& gpus,
          const std::vector<std::size_t>& without) {
  for (const auto& g : want.gpus) {
    const auto capacity = gpus.find(g);
    bool known = capacity != gpus.end() && want.memory;
    std::uint64_t used = want.memory.value_or(0);
    bool others = false;
    for (const auto& r : all) {
      if (!r.present || r.index == want.index || excluded(without, r.index) || !on_gpu(r, g))
        continue;
      others = true;
      known = known && r.memory;
      used += r.memory.value_or(0);
    }
    // Unknown memory: the GPU is the instance's alone (the profiles' rule).
    if (known ? used > capacity->second : others) return false;
  }
  return true;
}

double eviction_cost(const Resident& r) {
  const double idle_minutes = r.idle_seconds / 60;
  return idle_minutes < 1 ? r.reload_seconds : r.reload_seconds / (1 + idle_minutes);
}

std::optional<std::vector<std::size_t>> choose_evictions(const std::vector<Resident>& all,
                                                         const Resident& want,
                                                         const GpuMemory& gpus) {
  if (fits(all, want, gpus)) return std::vector<std::size_t>{};
  std::vector<const Resident*> candidates;
  for (const auto& r : all)
    if (r.present && r.evictable && r.index != want.index && shares_gpu(r, want))
      candidates.push_back(&r);
  std::sort(candidates.begin(), candidates.end(), [](const Resident* a, const Resident* b) {
    return std::make_tuple(a->busy, eviction_cost(*a)) <
           std::make_tuple(b->busy, eviction_cost(*b));
  });
  if (candidates.size() > kMaxCandidates) candidates.resize(kMaxCandidates);
  std::optional<std::vector<std::size_t>> best;
  std::tuple<int, double, std::size_t> best_key{};
  for (std::uint32_t set = 1; set < (1u << candidates.size()); ++set) {
    std::vector<std::size_t> chosen;
    int busy = 0;
    double cost = 0;
    for (std::size_t k = 0; k < candidates.size(); ++k) {
      if (!(set & (1u << k))) continue;
      chosen.push_back(candidates[k]->index);
      busy += candidates[k]->busy;
      cost += eviction_cost(*candidates[k]);
    }
    const auto key = std::make_tuple(busy, cost, chosen.size());
    if (best && key >= best_key) continue;
    if (!fits(all, want, gpus, chosen)) continue;
    best = std::move(chosen);
    best_key = key;
  }
  return best;
}

}  // namespace switchyard::profiles
