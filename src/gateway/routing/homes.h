// Where each agent session's context was last sent (its home), and how much
// each instance is home to: the weight of its active sessions, each weighing
// its last prompt's tokens (estimated from its bytes). The affinity policies
// place a session that has no home yet on the instance whose homes weigh
// least: when requests arrive one at a time every instance is idle, and
// "least loaded" is decided by noise in the measured rates, so sequential
// first turns could pile up on one instance and leave another empty; and
// counting sessions alone put two 32K-token sessions on one instance while
// another held only 2K-token ones.
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
  // The session's last prompt, in estimated tokens; 0 for an unknown one.
  long weight(std::string_view session) const;
  // Makes `instance` the session's home, its last prompt `prompt_bytes`
  // long, and marks the session active now.
  void set(std::string_view session, std::size_t instance, std::size_t prompt_bytes);

  // The free candidate passing `allowed` (under the load bound, say) whose
  // active homes weigh least, ties to the one expected to finish soonest;
  // `otherwise` when no free one passes.
  template <class Allowed>
  std::size_t place(std::span<const Candidate> candidates, const Allowed& allowed,
                    const Throughput& speed, Rotation& rotation, std::size_t otherwise);
  // The candidate whose active homes weigh least, free or not (the new
  // home of a session whose home died: a home chosen among the free ones
  // alone piled the moved sessions onto whichever had a slot that moment),
  // ties to the fewest requests per slot, then fleet order; the one
  // `session` reserved (reserve()), while it does.
  std::size_t lightest(std::span<const Candidate> candidates, std::string_view session);

  // Keeps `instance` for `session` until `until`: a request of that session
  // waits for the instance to finish what it runs, as its long prefill
  // would hold those requests up (PrefillCost::holds_up). Meanwhile no other
  // request is sent there (reserved_for_other), so that it empties, and the
  // session's `weight` counts on it, so that no other new session is placed
  // there. Ends when the session is routed (set()), leaves (unreserve())
  // or at `until`. An instance another session keeps stays with that one.
  void reserve(std::string_view session, std::size_t instance, long weight,
               Clock::time_point until);
  void unreserve(std::string_view session);
  // Asked of every candidate, several times a pick: answered at once while
  // no session keeps an instance, as is usual.
  bool reserved_for_other(std::size_t instance, std::string_view session) const {
    return held_ > 0 && kept_for_other(instance, session);
  }

  // Whether `session`, whose last prompt weighs `weight` tokens, weighs more
  // than the mean candidate's active homes, itself counted once: a session
  // that heavy, placed beside another heavy one because that was where a
  // slot was free, unbalances the fleet for its whole life.
  bool outweighs_mean(std::span<const Candidate> candidates, std::string_view session, long weight);

 private:
  // Refreshes weights_: the active homes' weight by fleet index.
  void weigh();

  struct Home {
    std::size_t instance;
    long weight;  // the last prompt's estimated tokens (at least 1)
    Clock::time_point active;
    std::list<std::string>::iterator recency;
  };

  struct Reservation {
    std::string session;  // empty: none
    long weight = 0;
    Clock::time_point until{};
  };
  const Reservation* reservation(std::size_t instance) const;  // active ones only
  bool reserved_by(std::size_t instance, std::string_view session) const;
  bool kept_for_other(std::size_t instance, std::string_view session) const;

  std::function<Clock::time_point()> now_;
  std::vector<Reservation> reserved_;                 // by fleet index
  std::size_t held_ = 0;                              // of reserved_ with a session, expired or not
  std::list<std::string> recency_;                    // most recently active first
  std::unordered_map<std::string_view, Home> homes_;  // keys view into recency_
  std::vector<long> weights_;                         // by fleet index, reused by weigh()
};

template <class Allowed>
std::size_t Homes::place(std::span<const Candidate> candidates, const Allowed& allowed,
                         const Throughput& speed, Rotation& rotation, std::size_t otherwise) {
  weigh();
  const auto weight_of = [&](const Candidate& c) {
    return c.index < weights_.size() ? weights_[c.index] : 0L;
  };
  long least = -1;
  for (const auto& c : candidates)
    if (c.free && allowed(c) && (least < 0 || weight_of(c) < least)) least = weight_of(c);
  if (least < 0) return otherwise;
  return soonest_free(candidates, speed, rotation,
                      [&](const Candidate& c) { return allowed(c) && weight_of(c) == least; });
}

}  // namespace switchyard::gateway
