#include "gateway/chains.h"

#include <chrono>

namespace switchyard::gateway {

Chains::Chains(const ChainParts& p, Stage& local_routes)
    : catalog(p.config.models),
      forward_options{p.config.attempts, p.config.retry_budget},
      tracing(p.config.tracing ? std::make_unique<RequestTracing>(*p.config.tracing) : nullptr),
      accounting(p.metrics, p.config.log.format == config::LogOptions::Format::json, tracing.get()),
      list_request(p.feed),
      record_usage(p.config.state_db, std::chrono::system_clock::now()),
      authenticate(p.keys),
      resolve(catalog),
      stored_responses(p.fleet.instances()),
      admit(p.executor, p.draining, p.keys, p.config.queue),
      route(p.dispatch.router(), p.dispatch.queue(), p.config.queue, p.metrics, p.config.routing,
            p.config.swapping.progress),
      forwarder(Upstreams{p.fleet.instances(),
                          [&fleet = p.fleet](std::size_t i, const std::string& why) {
                            fleet.report_failure(i, why);
                          },
                          [&fleet = p.fleet](std::size_t i) { fleet.report_success(i); }},
                route, forward_options, p.metrics),
      proxy({&accounting, &list_request, &record_usage, &authenticate, &resolve, &stored_responses,
             &admit, &route, &forwarder}),
      local({&accounting, &local_routes}) {
  const auto started = tenancy::Clock::now();
  admit.start_budgets(record_usage.today().tokens(started), started);
  for (SwitchGate* gate : p.dispatch.gates()) route.add_gate(gate);
}

}  // namespace switchyard::gateway
