// The forward stage: admission (slot or queue), the upstream call with
// retries before the first byte, and the relay of the response.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <memory>

#include "fleet/fleet.h"
#include "gateway/request_record.h"
#include "gateway/router.h"
#include "gateway/wait_queue.h"
#include "http/exchange.h"
#include "obs/gateway_metrics.h"
#include "openai/request_inspector.h"

namespace switchyard::gateway {

class Forwarder {
 public:
  // All references must outlive the forwarder.
  Forwarder(const fleet::FleetConfig& config, fleet::Fleet& fleet, WaitQueue& queue, Router& router,
            obs::GatewayMetrics& metrics);

  // Answers `request` for `model` (already resolved) through `exchange`.
  // Never throws; every failure is answered or, once streaming, ends the
  // stream with an error event.
  boost::asio::awaitable<void> forward(http::Request& request, openai::Endpoint endpoint,
                                       const openai::RequestFacts& facts, const std::string& model,
                                       http::Exchange& exchange, RequestRecord& record);

 private:
  struct Attempt;
  boost::asio::awaitable<Attempt> attempt(fleet::Instance& inst, http::UpstreamRequest& upstream,
                                          http::Exchange& exchange, RequestRecord& record);
  boost::asio::awaitable<Attempt> relay(fleet::Instance& inst, http::UpstreamCall& call,
                                        const http::UpstreamRequest& upstream,
                                        http::Exchange& exchange, RequestRecord& record);

  const fleet::FleetConfig& config_;
  fleet::Fleet& fleet_;
  WaitQueue& queue_;
  Router& router_;
  obs::GatewayMetrics& metrics_;
};

}  // namespace switchyard::gateway
