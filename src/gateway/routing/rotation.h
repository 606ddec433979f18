// A cursor over the fleet's instances, so that policies spread ties evenly
// instead of always favouring the first instance.
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>

#include "gateway/routing/policy.h"

namespace switchyard::gateway {

class Rotation {
 public:
  // The position in `free` (fleet order) where the rotation continues: the
  // first instance after the last one picked, wrapping around.
  std::size_t start(std::span<const Candidate> free) const {
    const auto it = std::partition_point(free.begin(), free.end(),
                                         [&](const Candidate& c) { return c.index < next_; });
    return it == free.end() ? 0 : static_cast<std::size_t>(it - free.begin());
  }
  void picked(const Candidate& c) { next_ = c.index + 1; }

 private:
  std::size_t next_ = 0;
};

}  // namespace switchyard::gateway
