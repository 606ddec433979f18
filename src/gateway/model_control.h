// The gateway's side of model residency (docs/models.md): runs
// profiles::ModelResidency over the fleet and the slot ledger, holds the
// requests of a model that is not loaded (up to swapping.max_wait), answers
// them 503 at once when its load fails, streams model events
// (GET /models/sse) and counts loads and unloads in the metrics.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fleet/fleet.h"
#include "gateway/route_stage.h"
#include "gateway/router.h"
#include "gateway/wait_queue.h"
#include "http/exchange.h"
#include "obs/gateway_metrics.h"
#include "profiles/model_residency.h"

namespace switchyard::gateway {

class ModelControl final : public SwitchGate {
 public:
  // Every reference must outlive this.
  ModelControl(boost::asio::any_io_executor executor, const config::FleetConfig& config,
               fleet::Fleet& fleet, Router& router, WaitQueue& queue, obs::GatewayMetrics& metrics);
  ~ModelControl() override;

  // A reload: `config`'s swapping options, cards and memory figures apply
  // from now on (the fleet has applied its instances); /models/sse says
  // `models_reload`, as llama.cpp's router does when its list changes.
  void reload(const config::FleetConfig& config);

  // Whether any instance of the config is load: on-demand.
  static bool wanted(const config::FleetConfig& config);

  profiles::ModelResidency& residency();

  // SwitchGate: a request of a model with nothing routable waits for its
  // load (swapping.max_wait); its end tells the residency.
  std::optional<std::chrono::milliseconds> hold(const RequestContext& ctx) override;
  void routed(const RequestContext& ctx) override;
  std::optional<openai::ApiError> refusal(const RequestContext& ctx) override;

  // A slot was released on this instance (recency, ttl, drains).
  void slot_released(std::size_t index);

  // What an engine reported of itself: an on-demand instance's load
  // progress goes to /models/sse as llama.cpp's router passes it on.
  void engine_state(const fleet::Instance& inst, const EngineState& state);

  // GET /models/sse: a `data:` line per model event until the client leaves
  // or `ending()`.
  boost::asio::awaitable<void> stream_events(http::Exchange& exchange,
                                             std::function<bool()> ending);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard::gateway
