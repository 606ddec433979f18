// The set of engines behind the gateway: starts the supervised ones, waits
// for them to be healthy, learns their slots, and stops them on shutdown.
// It knows nothing of the gateway; the gateway subscribes to state changes.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <functional>
#include <memory>
#include <vector>

#include "common/router_child.h"
#include "config/fleet_config.h"
#include "fleet/instance.h"

namespace switchyard::fleet {

class Fleet {
 public:
  // `self_path` is the running binary, the value of ${SWITCHYARD} in commands.
  Fleet(boost::asio::any_io_executor executor, const config::FleetConfig& config,
        std::string self_path);
  ~Fleet();
  Fleet(const Fleet&) = delete;
  Fleet& operator=(const Fleet&) = delete;

  const std::vector<std::unique_ptr<Instance>>& instances() const;

  // Called on the executor whenever an instance's state or slots change.
  void on_change(std::function<void(const Instance&)> callback);
  // Called on the executor for each state an engine reports on its output
  // (common/router_child.h: a llama-server's load progress). Every engine
  // started is told it has a router (LLAMA_SERVER_ROUTER_PORT, the
  // gateway's port) and its stdin stays open while it runs.
  void on_engine_state(std::function<void(const Instance&, const EngineState&)> callback);

  // Launches supervised engines, probes every instance until healthy, then
  // keeps watching: periodic probes, ejection with backoff, restarts.
  // Parked instances with `prestart` are started and put to sleep first.
  void start();

  // A request saw this instance fail (connect error, reset, stall, 5xx):
  // eject it now rather than at the next probe, for longer each time while
  // failures continue (health.backoff doubling up to backoff_max), unless
  // half of its model's instances are out already. A probe that answers
  // again readmits it on trial: one request at a time until one succeeds.
  void report_failure(std::size_t index, const std::string& reason);
  // A request was served well: the instance's failure record is cleared.
  void report_success(std::size_t index);

  // What a reload changed, by instance index.
  struct Changes {
    std::vector<std::size_t> added;    // new instances, starting now
    std::vector<std::size_t> removed;  // now `removed`: call stop_instance() once drained
  };
  // Takes a new config (SIGHUP): instances whose settings are unchanged keep
  // running; new and changed ones start (a changed one gets a new index);
  // gone and changed ones are marked removed. Indexes are never reused.
  Changes apply(const config::FleetConfig& config);

  // Stops one removed instance's engine (SIGTERM, SIGKILL after timeouts.stop).
  boost::asio::awaitable<void> stop_instance(std::size_t index);

  // Profiles (docs/profiles.md). Instances of profiles other than the first
  // that are not in the first start parked: admin parked, not started.
  //
  // Brings a parked instance up: wakes its engine when it sleeps, else starts
  // it, and waits until it is healthy (timeouts.startup). Its admin state is
  // left to the caller (a switch warms it first). nullopt, or why it failed.
  boost::asio::awaitable<std::optional<std::string>> bring_up(std::size_t index);
  // Takes an instance down on purpose: to sleep (sleep: true, falling back to
  // a stop when the engine refuses) or stopped. The caller parks it first
  // (its own admin cause).
  boost::asio::awaitable<void> bring_down(std::size_t index);
  // One 1-token completion, so the first real request does not pay the
  // engine's warm-up. nullopt, or why it failed.
  boost::asio::awaitable<std::optional<std::string>> warm(std::size_t index);
  // Adds or removes one cause of its admin state (the operator's drain, a
  // switch's steps, a model's residency); on_change runs when the set changed.
  void set_cause(std::size_t index, AdminCause cause, bool on);

  // Stops every supervised engine's process group: SIGTERM, then SIGKILL
  // after timeouts.stop. Completes when all have exited.
  boost::asio::awaitable<void> stop();

 private:
  void start_unhalted();
  boost::asio::awaitable<void> prestart(std::vector<std::size_t> early);

  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace switchyard::fleet
