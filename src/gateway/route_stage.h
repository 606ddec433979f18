// The route stage: a slot on an instance of the request's model (or, for
// calls that take none, an instance), at once or after waiting in the
// model's queue. The forward stage comes back here for each retry.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "config/fleet_config.h"
#include "fleet/instance.h"
#include "gateway/pipeline.h"
#include "gateway/router.h"
#include "gateway/wait_queue.h"
#include "obs/gateway_metrics.h"

namespace switchyard::gateway {

// Profiles (gateway/profile_control.h) and models (gateway/model_control.h):
// see each request as it reaches routing and say whether a switch or a load
// holds its model.
class SwitchGate {
 public:
  virtual ~SwitchGate() = default;
  // The request is about to be routed (the on-demand policy may start a
  // switch for it). The bound of its wait when a switch holds its model
  // (switching.max_hold, not queue.max_wait), else nullopt.
  virtual std::optional<std::chrono::milliseconds> hold(const RequestContext& ctx) = 0;
  // Routing of that request ended (a slot, an answer, or the client left).
  virtual void routed(const RequestContext& ctx) = 0;
  // The request ended (its usage, if any, in ctx.record).
  virtual void finished(const RequestContext&) {}
  // The answer for a held request whose wait ended without a slot (timed
  // out, or refused: its model failed to load); nullopt: the queue's own.
  virtual std::optional<openai::ApiError> refusal(const RequestContext&) { return std::nullopt; }
};

class RouteStage final : public WaitingStage {
 public:
  // All references must outlive the stage.
  // `hold_progress`: how often a streamed request held for a load is told
  // (swapping.progress; 0: never).
  RouteStage(Router& router, WaitQueue& queue, const config::QueueOptions& queue_options,
             obs::GatewayMetrics& metrics, config::RoutingOptions routing_options = {},
             std::chrono::milliseconds hold_progress = {})
      : router_(router),
        queue_(queue),
        queue_options_(queue_options),
        routing_options_(routing_options),
        hold_progress_(hold_progress),
        metrics_(metrics) {}

  // A slot free at the first try, for a request no one is queued ahead of
  // and no profile or model gate sees: taken at once; otherwise run().
  Decision check(RequestContext& ctx) override;
  boost::asio::awaitable<Verdict> run(RequestContext& ctx) override;
  // The queue's charge corrected to the usage, the router's rates and the
  // profiles told what the request used.
  void finish(RequestContext& ctx) override;

  enum class Routed {
    ok,        // ctx.target (and for slot calls ctx.lease) is set
    answered,  // refused with an answer, or the client left while waiting
    none_left  // no instance the request has not tried is ready or coming
  };
  // Chooses an instance for `ctx`, never one in ctx.tried. A retry goes
  // ahead of the queue and waits no longer than `max_wait`.
  boost::asio::awaitable<Routed> route(RequestContext& ctx, bool retry,
                                       std::chrono::milliseconds max_wait);

  // Profiles and models, each when configured; each must outlive the stage.
  void add_gate(SwitchGate* gate) { gates_.push_back(gate); }
  // swapping.progress, as a reload sets it.
  void set_hold_progress(std::chrono::milliseconds every) { hold_progress_ = every; }

 private:
  // A slot now, when one is free and (unless `retry`) no one waits for the
  // model; `why` says why not, when the router refused.
  bool take_free_slot(RequestContext& ctx, const RouteQuery& query, bool retry,
                      Router::Refusal& why);
  // The request got `lease`: counts the decision and tells the client where
  // it went (X-Switchyard-Route: instance=gpu2; match=0.87).
  void granted(RequestContext& ctx, RouteLease lease);

  // The 429 of a queue wait that ran out after `waited`.
  std::string timed_out_message(const RequestContext& ctx, std::chrono::milliseconds waited) const;
  boost::asio::awaitable<Routed> route_slot(RequestContext& ctx, bool retry,
                                            std::chrono::milliseconds max_wait, bool held);
  // The refusal a gate has for a held request, if any.
  std::optional<openai::ApiError> gate_refusal(const RequestContext& ctx) const;
  // route_slot() for a held request; a streamed one is told of the wait.
  boost::asio::awaitable<Routed> route_held(RequestContext& ctx, std::chrono::milliseconds bound);
  boost::asio::awaitable<void> tell_progress(RequestContext& ctx) const;
  std::vector<SwitchGate*> gates_;
  Router& router_;
  WaitQueue& queue_;
  const config::QueueOptions& queue_options_;
  const config::RoutingOptions routing_options_;
  std::chrono::milliseconds hold_progress_;
  obs::GatewayMetrics& metrics_;
};

}  // namespace switchyard::gateway
