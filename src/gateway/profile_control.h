// The gateway's side of profiles (docs/profiles.md): runs the switch over
// the fleet and the slot ledger, holds requests of a model while a switch
// involves it, feeds the on-demand policy what the gateway sees, and counts
// switches in the metrics.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "fleet/fleet.h"
#include "gateway/route_stage.h"
#include "gateway/router.h"
#include "gateway/wait_queue.h"
#include "obs/gateway_metrics.h"
#include "obs/status.h"
#include "profiles/profile_switch.h"

namespace switchyard::gateway {

class ProfileControl final : public SwitchGate {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  // Every reference must outlive this. Precondition: config.profiles is not
  // empty. `now`: the policy's clock (idleness, sustained queues, how long
  // a prefill lasts).
  ProfileControl(boost::asio::any_io_executor executor, const config::FleetConfig& config,
                 fleet::Fleet& fleet, Router& router, WaitQueue& queue,
                 obs::GatewayMetrics& metrics, Clock now = &std::chrono::steady_clock::now);
  ~ProfileControl() override;

  profiles::ProfileSwitch& switcher();
  const config::SwitchingOptions& options() const;

  // SwitchGate: the policy sees the arrival; a request of a held model waits
  // up to switching.max_hold.
  std::optional<std::chrono::milliseconds> hold(const RequestContext& ctx) override;
  void routed(const RequestContext& ctx) override;

  // A slot was released (the drain re-checks; the policy learns of idleness).
  void slot_released(std::size_t index);
  // A request ended: a streamed answer's prefill and decode rates, as
  // tokens over wall time, move the policy's estimates for its instance.
  void finished(const RequestContext& ctx) override;

  // The profiles part of the status snapshot.
  std::vector<obs::ProfileStatus> status() const;
  // The policy's last decisions, newest last (each a logged line).
  const std::vector<std::string>& decisions() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard::gateway
