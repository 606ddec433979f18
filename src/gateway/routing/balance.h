// What every policy weighs besides affinity: how loaded each instance is
// against the bound, and how fast each delivers tokens.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "gateway/routing/block_hash.h"
#include "gateway/routing/policy.h"
#include "gateway/routing/rotation.h"

namespace switchyard::gateway {

// Consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam;
// HAProxy's hash-balance-factor) with one request of slack: an instance may
// take one more request only while its requests, counting this one, stay
// within ceil(factor × (requests in flight + 1) × its slots / all slots) + 1.
// Without the slack, a fleet whose mean is under one request per instance
// bounds every instance at 1, so a second request for a home that has a free
// slot spills to an instance without its prefix: a full prefill to avoid
// running two requests side by side, which an engine with slots does without
// queueing. The slack is one request, not the instance's free slots, so the
// bound still spreads a hot prefix once the fleet is loaded (the excess over
// the mean stays under factor × mean + 1).
class LoadBound {
 public:
  // Requests an instance may run beyond factor × the mean (rounded up).
  static constexpr long kSlack = 1;

  LoadBound(std::span<const Candidate> candidates, double factor);
  // `in_flight` requests on `slots` slots in all.
  LoadBound(long in_flight, long slots, double factor);
  // in_flight + 1 <= ceil(x) + kSlack, for x its share of factor × (the
  // fleet's requests + 1), less a rounding's worth: that is x > in_flight -
  // kSlack, without ceil's library call (asked of every candidate).
  // Without slots per_slot_ < 0 makes x < -1: no instance is admitted.
  bool admits(const Candidate& c) const {
    const double x = per_slot_ * static_cast<double>(std::max(c.slots, 1)) - 1e-9;
    return c.free && x > static_cast<double>(c.in_flight - kSlack);
  }

 private:
  // factor × (requests in flight + 1) / all slots; < 0 without slots.
  double per_slot_ = -1;
};

// Tokens per second of wall time each instance delivered per request
// (EWMA), by fleet index: a card 18 % slower on the same die is only seen
// in what it delivers. A streamed answer counts the tokens after its first
// over the time after its first event: the whole request's time depends on
// its prompt's length and how much of it was cached, which vary between
// requests far more than the cards do (a short warm-up prompt made the
// slower card look 40 % faster than either).
class Throughput {
 public:
  void observe(std::size_t index, const RouteFeedback& feedback);
  double rate(std::size_t index) const {  // 0 while unknown
    return index < rate_.size() ? rate_[index] : 0;
  }
  // Every rate by fleet index, 0 while unknown (shorter than the fleet
  // until its last instances are measured).
  std::span<const double> rates() const { return rate_; }
  // The mean rate of the candidates measured; 1 while none is.
  double mean_rate(std::span<const Candidate> candidates) const;
  // Prompt tokens per second the instances evaluate (the uncached part of a
  // streamed answer's prompt over the time to its first event), the mean
  // over those measured; 0 while none is. What a spill's prefill would take.
  double prefill_rate() const;

 private:
  std::vector<double> rate_;
  std::vector<double> prefill_;  // by fleet index, 0 while unknown
};

// How soon a request's first token would come on each instance, in prompt
// tokens evaluated before it: what the instance is still prefilling for
// others (Candidate::prefilling) plus the part of this prompt it does not
// hold. A free slot is not free compute: a light session's first turn
// placed beside a 32K-token prefill took 5.4 s instead of 0.6 s, and its
// later turns then ran in step with the heavy session's there. An instance
// is passed over when it would start this request more than the request's
// own length later than the soonest one, busy ones included (a slot frees
// sooner than a long prefill ends): so a light turn does not go home to
// wait behind another session's long prefill, nor take the free slot beside
// it while light instances are busy, and two light turns still share a
// home (a spill's full prefill costs more than the wait).
//
// A long prompt also holds up what an instance runs already: an engine's
// step carries the running requests' next tokens with the next chunk of a
// prompt (llama-server's n_batch, vLLM's chunked prefill), so each of them
// gets a token per chunk until that prompt is evaluated. In the skewed run a
// 32K-token first turn placed beside a light turn that was answering made
// that turn take 5.3 s instead of 0.6 s. So an instance where the request
// would evaluate more than kHoldUp times the prompt of the shortest request
// it runs (and more than kHoldUp × kHoldUpFloor tokens: a prompt of a few
// chunks delays the others by a few steps) is not usable either: the
// request waits for it to finish those (Homes::reserve) or goes where it
// holds up no one.
class PrefillCost {
 public:
  static constexpr long kHoldUp = 4;
  static constexpr long kHoldUpFloor = 2048;  // llama-server's n_batch
  // `matched_blocks[i]`: the prompt's blocks candidate i holds; `tokens`:
  // the prompt's estimated length; `balance_factor`: the LoadBound's.
  // One pass over the candidates (the soonest start and the bound's sums);
  // what is asked of a candidate is worked out when asked, since a pick
  // that finds its home usable asks it of that one alone. Both spans must
  // outlive it.
  PrefillCost(std::span<const Candidate> candidates, double balance_factor, long tokens,
              std::span<const std::size_t> matched_blocks);
  // Free, under the bound, not passed over, and holding up no one there.
  // `c` is one of the candidates.
  bool usable(const Candidate& c) const { return usable(c, uncached(c)); }
  // Usable, and starting the request once it has evaluated no more than
  // `latest` tokens (latest_beside()). Asked of every candidate when a
  // request spills: what it evaluates is worked out once.
  bool usable_by(const Candidate& c, long latest) const {
    const long u = uncached(c);
    return c.prefilling + u <= latest && usable(c, u);
  }
  // Whether the request's prefill on `c` would hold up the requests it
  // runs (above), free slot or not.
  bool holds_up(const Candidate& c) const { return holds_up(c, uncached(c)); }
  // The tokens the request would evaluate on `c`: how long the requests
  // there would be held up, in prefill, when it holds them up.
  long uncached(const Candidate& c) const {
    return uncached(tokens_, matched_, static_cast<std::size_t>(&c - candidates_.data()));
  }
  // usable_by()'s `latest` for candidates that would start the request no
  // more than its length later than `home` would.
  long latest_beside(const Candidate& home) const { return cost(home) + tokens_; }
  // Tokens by which the soonest free candidate under the bound would start
  // the request later than the soonest candidate, busy or not: what waiting
  // for a slot there may gain.
  long free_delay() const;
  // Where a request goes when no candidate is usable: the free candidate
  // that would start it soonest, under the bound if one is (by requests
  // alone, a spill went to the free slot beside a 32K-token prefill).
  std::size_t soonest_start() const;

  // Whether `c`, which holds `matched_blocks` of the prompt, is usable()
  // whatever the other candidates hold: it starts the request no more than
  // its length after the least any candidate is still prefilling, which no
  // candidate's start undercuts. A test that asks no other candidate's
  // match (a lookup in its prefix index each, most of a pick at 256
  // instances): false leaves the answer to a PrefillCost.
  static bool surely_usable(std::span<const Candidate> candidates, const Candidate& c,
                            double balance_factor, long tokens, std::size_t matched_blocks);

 private:
  struct Sums {  // the constructor's pass
    long soonest, free_start, in_flight, slots;
    std::size_t free_start_at;
  };
  static Sums sum(std::span<const Candidate> candidates, long tokens,
                  std::span<const std::size_t> matched_blocks);
  PrefillCost(std::span<const Candidate> candidates, double balance_factor, long tokens,
              std::span<const std::size_t> matched_blocks, const Sums& sums);
  // Of a prompt of `tokens`, what candidate `i` does not hold.
  static long uncached(long tokens, std::span<const std::size_t> matched_blocks, std::size_t i) {
    return uncached(tokens, i < matched_blocks.size() ? matched_blocks[i] : 0);
  }
  // Of a prompt of `tokens`, what an instance holding `held` blocks of it does not.
  static long uncached(long tokens, std::size_t held) {
    return std::max(0L, tokens - static_cast<long>(held) * kBlockTokens);
  }
  // Tokens evaluated before the request's first on `c`: its uncached part
  // plus what `c` is still prefilling.
  long cost(const Candidate& c) const { return c.prefilling + uncached(c); }
  bool usable(const Candidate& c, long uncached) const {
    return bound_.admits(c) && c.prefilling + uncached <= soonest_ + tokens_ &&
           !holds_up(c, uncached);
  }
  static bool holds_up(const Candidate& c, long uncached) {
    return c.in_flight > 0 && uncached > kHoldUp * std::max(c.shortest_running, kHoldUpFloor);
  }
  // The free candidate under the bound that would start the request
  // soonest, once asked (free_delay, soonest_start): a second pass.
  struct SoonestFree {
    long cost;  // -1: none
    std::size_t at;
  };
  const SoonestFree& soonest_free() const;

  std::span<const Candidate> candidates_;
  std::span<const std::size_t> matched_;
  long tokens_;
  LoadBound bound_;
  long soonest_;               // the least cost of any candidate, busy ones included
  std::size_t free_start_at_;  // the free candidate that would start it soonest
  mutable std::optional<SoonestFree> soonest_free_;
};

// Seconds `tokens` of prefill take at `rate` tokens a second; 0 while the
// rate is unknown.
inline std::chrono::duration<double> prefill_seconds(long tokens, double rate) {
  return std::chrono::duration<double>(rate > 0 ? static_cast<double>(tokens) / rate : 0.0);
}

// Whether any free candidate passes `allowed` (choosing none, so that the
// rotation is left as it was).
template <class Allowed>
bool any_free(std::span<const Candidate> candidates, Allowed allowed) {
  return std::any_of(candidates.begin(), candidates.end(),
                     [&](const Candidate& c) { return c.free && allowed(c); });
}

// soonest_free()'s answer when no candidate qualifies.
inline constexpr std::size_t kNoCandidate = std::numeric_limits<std::size_t>::max();

// Where the instance of fleet index `index` is among the candidates, or
// kNoCandidate.
inline std::size_t position_of(std::span<const Candidate> candidates, std::size_t index) {
  const auto it = std::ranges::find(candidates, index, &Candidate::index);
  return it == candidates.end() ? kNoCandidate : static_cast<std::size_t>(it - candidates.begin());
}

// The free candidate (passing `allowed`) expected to finish a new request
// soonest: fewest requests per slot, each slot weighed by its instance's
// delivered rate (instances not yet measured count as the mean of the
// measured ones). Ties go in rotation. kNoCandidate when none qualifies.
template <class Allowed>
std::size_t soonest_free(std::span<const Candidate> candidates, const Throughput& speed,
                         Rotation& rotation, Allowed allowed);

inline std::size_t soonest_free(std::span<const Candidate> candidates, const Throughput& speed,
                                Rotation& rotation) {
  return soonest_free(candidates, speed, rotation, [](const Candidate&) { return true; });
}

template <class Allowed>
std::size_t soonest_free(std::span<const Candidate> candidates, const Throughput& speed,
                         Rotation& rotation, Allowed allowed) {
  // Asked of every free candidate, so kept to a few instructions each:
  // the rates read in place, each cost a fraction (requests over slots ×
  // rate) compared by cross-multiplying, without a division, and a new best
  // taken on a branch: in an even fleet most candidates tie with the first.
  const std::span<const double> rates = speed.rates();
  double fallback = 0;  // worked out at the first unmeasured free candidate
  std::size_t best = kNoCandidate;
  // The best's cost as requests (less the tie's margin) over speed.
  double best_requests = std::numeric_limits<double>::infinity(), best_speed = 1;
  const auto weigh = [&](std::size_t i) {
    const Candidate& c = candidates[i];
    if (!c.free) return;
    double r = c.index < rates.size() ? rates[c.index] : 0;
    if (r <= 0) r = fallback > 0 ? fallback : (fallback = speed.mean_rate(candidates));
    const double requests = c.in_flight + 1.0;
    const double speed_c = std::max(c.slots, 1) * r;
    // Within a part in a thousand is a tie: measured rates jitter. `allowed`
    // is asked last, of a candidate that would be chosen: it is the costly
    // part (a spill asks what each candidate would evaluate), and in an
    // even fleet most candidates tie with the first that qualifies.
    if (requests * best_speed < best_requests * speed_c && allowed(c)) [[unlikely]] {
      best = i;
      best_requests = 0.999 * requests;
      best_speed = speed_c;
    }
  };
  // In rotation order: from its start to the end, then from the front.
  const std::size_t first = rotation.start(candidates);
  for (std::size_t i = first; i < candidates.size(); ++i) weigh(i);
  for (std::size_t i = 0; i < first; ++i) weigh(i);
  if (best != kNoCandidate) rotation.picked(candidates[best]);
  return best;
}

}  // namespace switchyard::gateway
