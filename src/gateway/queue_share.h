// How a queued request ranks against others of its model (WaitQueue):
// its key's priority band, its key's weight, and its estimated cost.
#pragma once

#include <cstdint>

namespace switchyard::gateway {

struct QueueShare {
  int priority = 0;       // higher bands are served first
  double weight = 1;      // the key's share within its band
  std::int64_t cost = 1;  // estimated tokens (prompt + max_tokens)
  // Set by the queue when it charged `cost` to a band (its id; 0: never
  // charged), for WaitQueue::correct at the end.
  std::uint64_t charged = 0;
};

}  // namespace switchyard::gateway
