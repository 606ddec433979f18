// The on-demand policy: switch profiles only when it pays (docs/profiles.md).
//
// Triggers: requests queued at least switching.queue_depth deep for
// switching.sustain, or a waiting prompt the active profile cannot hold per
// slot or would prefill for longer than switching.prefill_bound. On a
// trigger it estimates, for every profile, when the waiting work would be
// done there (from each instance's throughput seeds) plus, for the others,
// the measured cost of the last switch between the two, and switches only to
// one that finishes sooner. Not again within switching.min_dwell; back to
// the first profile once another has had nothing to do for switching.idle,
// or once what it was needed for (the huge prompts the first profile would
// switch for, a deep queue) has been done, by estimate, for switching.idle:
// a chat trickle alone does not keep it.
// Pure: time is passed in, so it is tested with a fake clock.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/fleet_config.h"

namespace switchyard::profiles {

using config::InstanceEstimate;
using config::SwitchingOptions;

// One request waiting for a slot, as the gateway estimates it from its body.
struct WaitingJob {
  long prompt_tokens = 0;
  long output_tokens = 0;
};

// What the gateway sees of the profiles' traffic at a moment.
struct Demand {
  std::vector<WaitingJob> waiting;  // oldest first
  int in_flight = 0;                // on the active profile's instances
};

// One instance's throughput as the policy models it.
struct InstanceSpeed {
  std::string name;
  int slots = 1;
  InstanceEstimate estimate;
};

struct ProfileSpeed {
  std::string name;
  std::vector<InstanceSpeed> instances;
  // Whether every instance has seeds (decode_tps and prefill_tps): a profile
  // without them is never chosen by the policy.
  bool known() const;
};

struct Decision {
  std::string target;  // the profile to switch to
  std::string reason;  // "queue", "huge_prompt" or "idle"
};

using steady_time = std::chrono::steady_clock::time_point;

// What one streamed request measured on an instance, as tokens over wall
// time: its uncached prompt tokens until the first token, its output after.
struct RateSample {
  long prompt_tokens = 0;
  long cached_tokens = 0;
  double first_token_seconds = 0;  // from the engine taking it (the gateway's queue excluded)
  long output_tokens = 0;
  double decode_seconds = 0;  // from the first token to the last
};

class SwitchPolicy {
 public:
  // `profiles` in config order: the first is the daily one.
  SwitchPolicy(std::vector<ProfileSpeed> profiles, SwitchingOptions options);

  // What to do now, `active` being the active profile and no switch
  // running. Every decision a trigger leads to, switch or stay, is logged
  // with its numbers and kept (last_explanation()).
  std::optional<Decision> decide(const std::string& active, const Demand& demand, steady_time now);

  // A switch ended at `now` having cost `seconds` (its measured cost is used
  // for the next estimate of that pair), or was rolled back.
  void switched(const std::string& from, const std::string& to, double seconds, bool ok,
                steady_time now);

  // Seconds until `jobs` are done on `profile`; nullopt when one of its
  // prompts does not fit there (context per slot).
  std::optional<double> finish_seconds(const ProfileSpeed& profile,
                                       const std::vector<WaitingJob>& jobs) const;
  // The expected cost of switching between two profiles: the last measured
  // one, else switching.switch_cost.
  double switch_cost(const std::string& from, const std::string& to) const;

  // The line the last decision logged.
  const std::string& last_explanation() const { return explanation_; }

  // A request that `instance` served measured its rates: each moves that
  // instance's estimate from its seed (an exponential average), so a card
  // slower than configured, or a context deeper than seeded, is planned as
  // it is. Samples too small to measure a rate are ignored.
  void measured(const std::string& instance, const RateSample& sample);
  // The profiles with their current estimates, in config order.
  const std::vector<ProfileSpeed>& profiles() const { return profiles_; }

  // A request was given a slot on `instance` at `now`. When its estimated
  // prefill there is longer than `long_after`, requests behind it wait for
  // all of it (vLLM's default scheduler gives a running prefill the whole
  // token budget; llama-server's slot is taken), and the instance counts as
  // busy with a long prefill until its estimated end. True in that case.
  bool started(const std::string& instance, const WaitingJob& job, steady_time now,
               std::chrono::milliseconds long_after);
  // Whether `instance` is busy with such a prefill at `now`.
  bool long_prefill(const std::string& instance, steady_time now) const;

 private:
  const ProfileSpeed* find(const std::string& name) const;
  std::optional<Decision> weigh(const ProfileSpeed& active, const Demand& demand,
                                const std::string& reason);
  std::optional<std::string> huge_prompt(const ProfileSpeed& active, const Demand& demand) const;
  std::optional<std::string> huge_job(const ProfileSpeed& active, const WaitingJob& job) const;
  void note_need(const ProfileSpeed& active, const Demand& demand, steady_time now);

  std::vector<ProfileSpeed> profiles_;  // seeds, moved by measured()
  const SwitchingOptions options_;
  std::map<std::pair<std::string, std::string>, double> measured_;  // (from, to) → seconds
  std::optional<steady_time> last_switch_;
  std::optional<steady_time> deep_since_;  // the queue trigger's condition holds since
  std::optional<steady_time> idle_since_;  // nothing waiting or running since
  // When the work the active profile (not the first) is needed for should be
  // done: the estimated end of the last huge prompt or deep queue seen.
  std::optional<steady_time> needed_until_;
  std::map<std::string, steady_time> long_until_;  // instance → estimated end of its long prefill
  // The trigger that led to the last "stay": the same one again is not
  // logged again until it changes.
  std::string quiet_;
  std::string explanation_;
};

// Seconds to prefill `tokens` on an instance (the sim's depth model).
double prefill_seconds(const InstanceEstimate& e, double tokens);

}  // namespace switchyard::profiles
