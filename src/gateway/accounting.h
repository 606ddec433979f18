// The account stage, first in every chain so that it finishes last, for
// every request however it ended: the metrics, the access log line (text,
// or one JSON object with log.format: json) and, when tracing, the request's
// spans to the exporter.
#pragma once

#include "gateway/pipeline.h"
#include "obs/gateway_metrics.h"

namespace switchyard::gateway {

class RequestTracing;

class Accounting final : public Stage {
 public:
  // `tracing` may be null (no tracing:) and must outlive this.
  Accounting(obs::GatewayMetrics& metrics, bool json_log, RequestTracing* tracing)
      : metrics_(metrics), json_log_(json_log), tracing_(tracing) {}
  Decision check(RequestContext&) override { return {}; }
  void finish(RequestContext& ctx) override;
  // The access line of a request refused on its head alone (Gateway::screen).
  void refused(const http::RequestHead& head, std::string_view id, int status) const;

 private:
  void log_line(const RequestContext& ctx, const std::string& trace_id) const;
  void log_json(const RequestContext& ctx, const std::string& trace_id) const;

  obs::GatewayMetrics& metrics_;
  bool json_log_;
  RequestTracing* tracing_;
};

}  // namespace switchyard::gateway
