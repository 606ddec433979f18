// The account stage, run for every request however it ended: the metrics
// and the access log line.
#pragma once

#include "gateway/pipeline.h"
#include "obs/gateway_metrics.h"

namespace switchyard::gateway {

class Accounting {
 public:
  explicit Accounting(obs::GatewayMetrics& metrics) : metrics_(metrics) {}
  // `key`: the API key's name; empty without keys.
  void finish(const http::RequestHead& head, const RequestRecord& record, std::string_view key);

 private:
  obs::GatewayMetrics& metrics_;
};

}  // namespace switchyard::gateway
