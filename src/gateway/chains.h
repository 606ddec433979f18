// The two chains a request runs through and their stages, in the order they
// run (docs/architecture.md, "The request path"): `proxy` for the API's
// routes, forwarded to an engine; `local` for the routes the gateway
// answers itself, whose last stage the gateway gives. Each stage's finish
// runs in reverse order when the request ends.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <memory>

#include "config/fleet_config.h"
#include "fleet/fleet.h"
#include "gateway/accounting.h"
#include "gateway/admission.h"
#include "gateway/api_keys.h"
#include "gateway/console_feed.h"
#include "gateway/dispatch.h"
#include "gateway/feed_stage.h"
#include "gateway/forwarder.h"
#include "gateway/ledger_stage.h"
#include "gateway/model_catalog.h"
#include "gateway/pipeline.h"
#include "gateway/request_tracing.h"
#include "gateway/resolve.h"
#include "gateway/route_stage.h"
#include "gateway/stored_responses.h"
#include "obs/gateway_metrics.h"

namespace switchyard::gateway {

// What the stages read and report to; every reference must outlive the chains.
struct ChainParts {
  boost::asio::any_io_executor executor;
  const config::FleetConfig& config;  // the gateway's: a reload changes some fields
  fleet::Fleet& fleet;
  obs::GatewayMetrics& metrics;
  const ApiKeys& keys;  // the key table in force
  Dispatch& dispatch;
  ConsoleFeed& feed;
  const bool& draining;
};

struct Chains {
  Chains(const ChainParts& parts, Stage& local_routes);
  Chains(const Chains&) = delete;
  Chains& operator=(const Chains&) = delete;

  ModelCatalog catalog;                     // the aliases resolve reads; a reload replaces it
  ForwardOptions forward_options;           // read at each request; a reload replaces it
  std::unique_ptr<RequestTracing> tracing;  // null without tracing
  Accounting accounting;
  ListRequest list_request;
  RecordUsage record_usage;
  Authenticate authenticate;
  Resolve resolve;
  StoredResponses stored_responses;
  Admit admit;
  RouteStage route;
  Forwarder forwarder;
  Pipeline proxy;
  Pipeline local;
};

}  // namespace switchyard::gateway
