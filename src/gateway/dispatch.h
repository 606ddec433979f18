// Where a model's requests go, and when: the router over the fleet's
// instances, each model's wait queue, and the gates that hold requests
// while instances change (profile switches, on-demand models). A freed slot
// goes to the next waiter of its model; an instance a reload removed is
// stopped once its last request is done.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <cstddef>
#include <memory>
#include <set>
#include <vector>

#include "config/fleet_config.h"
#include "fleet/fleet.h"
#include "gateway/model_control.h"
#include "gateway/profile_control.h"
#include "gateway/router.h"
#include "gateway/wait_queue.h"
#include "obs/gateway_metrics.h"

namespace switchyard::gateway {

class Dispatch {
 public:
  // Every reference must outlive this.
  Dispatch(boost::asio::any_io_executor executor, const config::FleetConfig& config,
           fleet::Fleet& fleet, obs::GatewayMetrics& metrics);
  // Leases may be released after this (frames destroyed at shutdown): the
  // queue they would wake is gone.
  ~Dispatch() { router_.on_release(nullptr); }
  Dispatch(const Dispatch&) = delete;
  Dispatch& operator=(const Dispatch&) = delete;

  Router& router() { return router_; }
  const Router& router() const { return router_; }
  WaitQueue& queue() { return queue_; }
  const WaitQueue& queue() const { return queue_; }
  ProfileControl* profiles() const { return profiles_.get(); }  // null without profiles
  ModelControl* models() const { return models_.get(); }        // null without on-demand instances
  // What the route stage asks before it routes, in order.
  std::vector<SwitchGate*> gates() const;

  // A reload the fleet has applied: instances it removed are each stopped
  // once their last request is done; on-demand instances get their models'
  // control, made now when this is the first reload that has any. Returns
  // the gate it made (the route stage asks it from now on), else null.
  SwitchGate* reload(const config::FleetConfig& config, const std::vector<std::size_t>& removed);

  // An engine's report of itself, to the models' control (load progress).
  void engine_state(const fleet::Instance& inst, const EngineState& state) {
    if (models_) models_->engine_state(inst, state);
  }

 private:
  void stop_instance(std::size_t index);

  boost::asio::any_io_executor executor_;
  fleet::Fleet& fleet_;
  obs::GatewayMetrics& metrics_;
  Router router_;
  WaitQueue queue_;
  std::unique_ptr<ProfileControl> profiles_;
  std::unique_ptr<ModelControl> models_;
  std::set<std::size_t> retiring_;  // removed by a reload, still finishing requests
};

}  // namespace switchyard::gateway
