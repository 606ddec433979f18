// The profile switch: the state machine that takes a box from one named set
// of instances to another without losing a request (docs/profiles.md).
//
//   active → draining (old instances take nothing new; in-flight requests
//   finish, new ones are held by the gateway) → stopping (stop or sleep the
//   old ones) → starting (start or wake the new ones, wait for health) →
//   warming (one 1-token request each) → active on the new profile.
//
// A failed start or warm-up rolls back: the new instances go down again, the
// old ones come back, and the record says why. The drain, stop and start are
// a model load's too (profiles/transition.h); what they do to the world is a
// SwitchEnv, so the machine is tested with fakes.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/fleet_config.h"
#include "fleet/instance.h"
#include "profiles/transition.h"

namespace switchyard::profiles {

using config::ProfileConfig;
using config::SwitchingOptions;
using fleet::AdminCause;
using fleet::AdminState;

// What a switch does to instances, beyond the steps' (its causes are
// profile_draining and profile_parked). Used from the executor's thread only.
class SwitchEnv : public InstanceControl {
 public:
  // The current instance of that name (a reload may have replaced it).
  virtual std::optional<std::size_t> find(const std::string& name) const = 0;
  virtual std::string name(std::size_t index) const = 0;
  virtual std::string model(std::size_t index) const = 0;
  virtual boost::asio::awaitable<Outcome> warm(std::size_t index) = 0;
};

enum class SwitchPhase { active, draining, stopping, starting, warming, rolling_back };
const char* to_string(SwitchPhase phase);

// One switch, finished.
struct SwitchRecord {
  std::string from, to;
  std::string reason;  // "manual", "queue", "huge_prompt", "idle", or the caller's
  bool ok = false;     // false: rolled back (still on `from`)
  std::string error;   // why it rolled back
  double seconds = 0;  // the whole switch
  // Its steps, for the policy's cost estimate.
  double drain_seconds = 0, stop_seconds = 0, start_seconds = 0, warm_seconds = 0;
};

class ProfileSwitch {
 public:
  // `env` must outlive the switch. The first profile is active.
  // Precondition: `profiles` is not empty (validated config).
  ProfileSwitch(boost::asio::any_io_executor executor, std::vector<ProfileConfig> profiles,
                SwitchingOptions options, SwitchEnv& env);
  ~ProfileSwitch();

  const std::vector<ProfileConfig>& profiles() const { return profiles_; }
  const std::string& active() const { return active_; }
  SwitchPhase phase() const { return phase_; }
  bool switching() const { return phase_ != SwitchPhase::active; }
  const std::string& target() const { return target_; }  // empty unless switching
  // When the current phase (or the active profile) began.
  std::chrono::system_clock::time_point since() const { return since_; }
  const std::optional<SwitchRecord>& last() const { return last_; }

  // The models of the instances a running switch takes down or brings up:
  // requests for them are held (switching.max_hold) until it ends.
  const std::set<std::string>& held_models() const { return held_; }

  // Starts a switch to `target` now: the old instances are draining when
  // this returns, so a request routed right after is held, not sent to them.
  // An error (unknown profile, a switch running, already active) starts none.
  std::optional<std::string> begin(const std::string& target, const std::string& reason);
  // Completes when no switch runs (at once when none does); the last record.
  boost::asio::awaitable<std::optional<SwitchRecord>> wait_done();

  // A request on one of the instances ended: the drain re-checks at once.
  void notify();
  // Called on every phase change and at the end of a switch.
  void on_phase(std::function<void(SwitchPhase)> callback) { on_phase_ = std::move(callback); }
  void on_done(std::function<void(const SwitchRecord&)> callback) {
    on_done_ = std::move(callback);
  }

 private:
  boost::asio::awaitable<void> run(std::vector<std::size_t> down, std::vector<std::size_t> up,
                                   SwitchRecord record);
  void enter(SwitchPhase phase);
  const ProfileConfig* find(const std::string& name) const;
  std::vector<std::size_t> members(const ProfileConfig& p) const;

  boost::asio::any_io_executor executor_;
  const std::vector<ProfileConfig> profiles_;
  const SwitchingOptions options_;
  SwitchEnv& env_;

  // Guarded by the executor's thread.
  std::string active_;
  std::string target_;
  SwitchPhase phase_ = SwitchPhase::active;
  std::chrono::system_clock::time_point since_ = std::chrono::system_clock::now();
  std::optional<SwitchRecord> last_;
  std::set<std::string> held_;
  Transition steps_;
  std::set<boost::asio::steady_timer*> done_waits_;  // wait_done() callers
  std::function<void(SwitchPhase)> on_phase_;
  std::function<void(const SwitchRecord&)> on_done_;
};

}  // namespace switchyard::profiles
