#include "profiles/swap_order.h"

#include <algorithm>
#include <tuple>

namespace switchyard::profiles {

bool aged(const ModelWait& wait, std::chrono::milliseconds max_wait) {
  const double bound = std::chrono::duration<double>(max_wait).count();
  return wait.waiting > 0 && wait.oldest_wait >= bound - wait.load_seconds;
}

std::vector<std::string> swap_order(std::vector<ModelWait> waits,
                                    const config::SwappingOptions& options) {
  using Policy = config::SwappingOptions::Policy;
  std::stable_sort(waits.begin(), waits.end(), [&](const ModelWait& a, const ModelWait& b) {
    if (options.policy == Policy::fifo) return a.oldest_wait > b.oldest_wait;
    const bool a_aged = aged(a, options.max_wait), b_aged = aged(b, options.max_wait);
    if (a_aged != b_aged) return a_aged;
    if (a_aged) return a.oldest_wait > b.oldest_wait;
    return std::make_tuple(a.waiting, a.oldest_wait) > std::make_tuple(b.waiting, b.oldest_wait);
  });
  std::vector<std::string> order;
  for (const auto& w : waits)
    if (w.waiting > 0) order.push_back(w.model);
  return order;
}

bool may_preempt(const ModelWait& want, double resident_seconds,
                 const config::SwappingOptions& options) {
  if (options.policy == config::SwappingOptions::Policy::fifo) return true;
  return aged(want, options.max_wait) &&
         resident_seconds >= std::chrono::duration<double>(options.min_resident).count();
}

}  // namespace switchyard::profiles
