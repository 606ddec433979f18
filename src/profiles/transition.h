// The steps every change of what runs on the cards is made of. A profile
// switch (profiles/profile_switch.h) and a model's load or unload
// (profiles/model_residency.h) are both "these instances go, those come":
// they drain the ones that go, stop them all at once and start the others
// all at once, by this code, so both keep one promise: a running request is
// never cut unless the operator chose switching.on_drain_timeout: abort.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/fleet_config.h"
#include "fleet/instance.h"

namespace switchyard::profiles {

using Outcome = std::optional<std::string>;  // nullopt, or why it failed

// What the steps do to instances. Used from the executor's thread only.
class InstanceControl {
 public:
  virtual ~InstanceControl() = default;
  // Requests the gateway has on it now.
  virtual int in_flight(std::size_t index) const = 0;
  // Adds or removes one admin cause; other parties' causes stay as they are.
  virtual void set_cause(std::size_t index, fleet::AdminCause cause, bool on) = 0;
  // Start or wake, until healthy.
  virtual boost::asio::awaitable<Outcome> bring_up(std::size_t index) = 0;
  // Stop or sleep.
  virtual boost::asio::awaitable<void> bring_down(std::size_t index) = 0;
};

// The admin causes a party marks its instances with: `draining` while they
// finish their requests, `parked` once they are down.
struct TransitionCauses {
  fleet::AdminCause draining;
  fleet::AdminCause parked;
};

class Transition {
 public:
  // `control` must outlive this.
  Transition(boost::asio::any_io_executor executor, InstanceControl& control,
             TransitionCauses causes);
  ~Transition();

  // Waits until none of `indices` has a request in flight (the caller has
  // marked them draining, so nothing new comes). Past `options.drain_timeout`
  // it goes on with on_drain_timeout: abort, else waits on; `what` names the
  // change in the warning. False, at once, when `cancelled` says so.
  boost::asio::awaitable<bool> drain(std::vector<std::size_t> indices,
                                     config::SwitchingOptions options, std::string what,
                                     std::function<bool()> cancelled = {});
  // Parks each (draining off) and stops or sleeps them all at once.
  boost::asio::awaitable<void> stop(std::vector<std::size_t> indices);
  // Starts or wakes them all at once; their outcomes in the order given.
  boost::asio::awaitable<std::vector<Outcome>> start(std::vector<std::size_t> indices);

  // A request ended, or a drain's reason to stop may have changed: every
  // drain checks again now.
  void notify();

 private:
  boost::asio::awaitable<std::vector<Outcome>> all_at_once(
      const std::vector<std::size_t>& indices,
      std::function<boost::asio::awaitable<Outcome>(std::size_t)> step);

  boost::asio::any_io_executor executor_;
  InstanceControl& control_;
  const TransitionCauses causes_;
  // The drains' waits, cut short by notify(); shared with them, as a drain
  // suspended when this goes is destroyed after it.
  std::shared_ptr<std::set<boost::asio::steady_timer*>> waits_;
};

}  // namespace switchyard::profiles
