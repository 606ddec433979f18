// The forward stage: one upstream call per attempt (its relay:
// gateway/relay.h), retried on another instance while the client has seen
// nothing (within `attempts` and `retry_budget`); an instance that failed
// a request is reported, one that served it cleared.
#pragma once

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "config/fleet_config.h"
#include "gateway/drain_cutoff.h"
#include "gateway/pipeline.h"
#include "gateway/relay.h"
#include "gateway/route_stage.h"
#include "gateway/router.h"
#include "gateway/unanswered_calls.h"
#include "http/upstream.h"
#include "obs/gateway_metrics.h"

namespace switchyard::gateway {

// What the forwarder needs of the fleet: its instances (each with its
// connection pool) and a way to report one that failed a request.
struct Upstreams {
  const InstanceTable& instances;
  // Ejects the instance (it failed a request in a way that is its own fault).
  std::function<void(std::size_t index, const std::string& reason)> report_failure;
  // The instance served a request (outlier detection clears its record).
  std::function<void(std::size_t index)> report_success;
};

struct ForwardOptions {
  int attempts = 3;                               // FleetConfig::attempts
  std::chrono::milliseconds retry_budget{30000};  // FleetConfig::retry_budget
};

class Forwarder final : public WaitingStage {
 public:
  // All references must outlive the forwarder. `options` is read at each
  // request (a reload changes it).
  Forwarder(Upstreams upstreams, RouteStage& routing, const ForwardOptions& options,
            obs::GatewayMetrics& metrics)
      : upstreams_(std::move(upstreams)), routing_(routing), options_(options), metrics_(metrics) {}

  // Never throws; every failure is answered or, once streaming, ends the
  // stream with an error event. Precondition: the route stage set ctx.target.
  boost::asio::awaitable<Verdict> run(RequestContext& ctx) override;

  // The instance was ejected: its calls that have sent the client nothing
  // yet (a hung engine's, say) are cut, so that they retry elsewhere now
  // instead of waiting out timeouts.first_byte.
  void abandon_unanswered(std::size_t index);

  // The drain ran out (DrainCutoff): every request still forwarding is
  // ended now (`drain`: timeouts.drain); none is retried and no engine is
  // blamed.
  void end_running(std::chrono::milliseconds drain) { cutoff_.cut_all(drain); }

 private:
  boost::asio::awaitable<AttemptOutcome> attempt(RequestContext& ctx, fleet::Instance& inst);
  // A request the cutoff caught before its first byte: 503 shutting_down.
  boost::asio::awaitable<Verdict> end_for_drain(RequestContext& ctx);
  // Every attempt failed: 502 naming the last failure. Out of run(), whose
  // frame is held for as long as a stream is open.
  boost::asio::awaitable<Verdict> answer_failed(RequestContext& ctx, const std::string& last_error);

  Upstreams upstreams_;
  RouteStage& routing_;
  const ForwardOptions& options_;
  obs::GatewayMetrics& metrics_;
  // What all non-streamed responses being relayed may hold in memory at once.
  std::shared_ptr<http::BufferBudget> buffered_ = std::make_shared<http::BufferBudget>();
  UnansweredCalls unanswered_;
  DrainCutoff cutoff_;
};

}  // namespace switchyard::gateway
