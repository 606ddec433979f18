// Which loaded instances to unload so that another fits its GPUs
// (docs/models.md): memory is accounted per GPU, an instance over several
// GPUs counting on each; where a figure is unknown, instances sharing a GPU
// are never loaded together. Pure: the caller says which instances may go.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace switchyard::profiles {

// One instance as the choice sees it.
struct Resident {
  std::size_t index = 0;
  std::vector<std::string> gpus;
  std::optional<std::uint64_t> memory;  // per GPU; nullopt: unknown
  bool present = false;                 // loaded, loading or draining: holds its memory
  bool evictable = false;               // the caller's rules allow unloading it now
  bool busy = false;                    // requests in flight or queued: drained before it goes
  double reload_seconds = 0;            // what loading it again would cost (measured)
  double idle_seconds = 0;              // since its last request
  double demand = 0;                    // its model's recent requests (decayed count)
};

// Each GPU's memory, by id; an id missing: unknown.
using GpuMemory = std::map<std::string, std::uint64_t>;

// Bytes per GPU the present instances hold (those with a known figure).
std::map<std::string, std::uint64_t> memory_in_use(const std::vector<Resident>& all);

// Whether `want` fits beside the present instances but `without`.
bool fits(const std::vector<Resident>& all, const Resident& want, const GpuMemory& gpus,
          const std::vector<std::size_t>& without = {});

// What unloading `r` costs: loading it again, weighed by how recently it was
// used (used within the last minute: all of it; idle for n minutes: 1/(1+n)).
double eviction_cost(const Resident& r);

// The cheapest set of evictable present instances whose unloading lets
// `want` fit: fewest busy ones first (they must drain), then the least
// cost, then the fewest. Empty when it fits already; nullopt when no set
// does.
std::optional<std::vector<std::size_t>> choose_evictions(const std::vector<Resident>& all,
                                                         const Resident& want,
                                                         const GpuMemory& gpus);

}  // namespace switchyard::profiles
