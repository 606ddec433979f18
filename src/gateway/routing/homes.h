// Where each agent session's context was last sent (its home), and how many
// active sessions each instance is home to. The affinity policies place a
// session that has no home yet on the instance home to the fewest active
// sessions: when requests arrive one at a time every instance is idle, and
// "least loaded" is decided by noise in the measured rates, so sequential
// first turns could pile up on one instance and leave another empty.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gateway/routing/balance.h"
#include "gateway/routing/policy.h"
#include "gateway/routing/rotation.h"

namespace switchyard::gateway {

class Homes {
 public:
  using Clock = std::chrono::steady_clock;
  // Sessions remembered at most, least recently active forgotten first.
  static constexpr std::size_t kMaxSessions = 1 << 16;
  // A session idle this long no longer counts toward its home's share: it
  // has ended, or its engine has long reused the slot.
  static constexpr std::chrono::minutes kActiveFor{5};

  explicit Homes(std::function<Clock::time_point()> now = &Clock::now) : now_(std::move(now)) {}

  std::optional<std::size_t> find(std::string_view session) const;
  // Makes `instance` the session's home and marks the session active now.
  void set(std::string_view session, std::size_t instance);

  // The free candidate under `bound` home to the fewest active sessions,
  // ties to the one expected to finish soonest; when every free one is
  // over the bound, the soonest of them.
  std::size_t place(std::span<const Candidate> candidates, const LoadBound& bound,
                    const Throughput& speed, Rotation& rotation);

 private:
  struct Home {
    std::size_t instance;
    Clock::time_point active;
    std::list<std::string>::iterator recency;
  };

  std::function<Clock::time_point()> now_;
  std::list<std::string> recency_;                    // most recently active first
  std::unordered_map<std::string_view, Home> homes_;  // keys view into recency_
  std::vector<int> counts_;                           // by fleet index, reused by place()
};

}  // namespace switchyard::gateway
