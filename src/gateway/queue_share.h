// How a queued request ranks against others of its model (WaitQueue):
// its key's priority band, its key's weight, and its estimated cost.
#pragma once

#include <cstdint>

namespace switchyard::gateway {

struct QueueShare {
  int priority = 0;       // higher bands are served first
  double weight = 1;      // the key's share within its band
  std::int64_t cost = 1;  // estimated tokens (prompt + max_tokens)
};

}  // namespace switchyard::gateway
