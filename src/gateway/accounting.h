// The account stage, first in every chain so that it finishes last, for
// every request however it ended: the metrics and the access log line.
#pragma once

#include "gateway/pipeline.h"
#include "obs/gateway_metrics.h"

namespace switchyard::gateway {

class Accounting final : public Stage {
 public:
  explicit Accounting(obs::GatewayMetrics& metrics) : metrics_(metrics) {}
  boost::asio::awaitable<Verdict> run(RequestContext&) override { co_return Verdict::next; }
  void finish(RequestContext& ctx) override;

 private:
  obs::GatewayMetrics& metrics_;
};

}  // namespace switchyard::gateway
