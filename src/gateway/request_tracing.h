// Traces of the gateway's requests (docs/tracing.md): starts each proxied
// request's trace (continuing the client's traceparent, sampling new ones),
// and at the request's end names the root span after the OpenTelemetry
// GenAI conventions, adds what the request did, and hands the spans to the
// exporter. The stages record their own child spans (obs::ScopedSpan).
#pragma once

#include <memory>
#include <optional>
#include <random>
#include <string>

#include "config/fleet_config.h"
#include "gateway/pipeline.h"
#include "obs/request_trace.h"
#include "obs/trace_exporter.h"

namespace switchyard::gateway {

class RequestTracing {
 public:
  // Exports to options.endpoint over OTLP/HTTP (JSON).
  explicit RequestTracing(const config::TracingOptions& options);
  // `exporter` takes the finished spans (tests give one with a fake sender).
  RequestTracing(double sample, std::unique_ptr<obs::TraceExporter> exporter);

  // The trace of a request that has just arrived.
  std::optional<obs::RequestTrace> start(const http::RequestHead& head);
  // The request ended: the root span's attributes and status, then export
  // (when sampled). Leaves ctx.trace without spans.
  void finish(RequestContext& ctx);

  std::string metrics_text() const { return exporter_->metrics_text(); }

 private:
  double sample_;
  std::mt19937_64 rng_{std::random_device{}()};
  std::uniform_real_distribution<double> coin_{0.0, 1.0};
  std::unique_ptr<obs::TraceExporter> exporter_;
};

// The GenAI operation a route performs (gen_ai.operation.name): "chat",
// "text_completion", "embeddings", or the route's own name.
std::string_view genai_operation(openai::Endpoint endpoint);

// The OTLP/HTTP traces URL of a collector endpoint.
std::string otlp_traces_url(const std::string& endpoint);

}  // namespace switchyard::gateway
