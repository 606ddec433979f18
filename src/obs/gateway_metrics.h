// The gateway's Prometheus metrics. Label values are bounded: models and
// instances come from the config, statuses from HTTP.
#pragma once

#include <memory>
#include <string>

namespace switchyard::obs {

// Used from the gateway's one I/O thread (its lookup cache is not locked).
class GatewayMetrics {
 public:
  GatewayMetrics();
  ~GatewayMetrics();
  GatewayMetrics(const GatewayMetrics&) = delete;
  GatewayMetrics& operator=(const GatewayMetrics&) = delete;

  // One finished request. `instance` is empty when none was chosen (refused
  // before routing). Times in seconds; ttfb < 0 when nothing was sent.
  void request_finished(const std::string& model, const std::string& instance, int status,
                        double ttfb_seconds, double total_seconds);
  void set_in_flight(const std::string& instance, int value);
  void set_instance_up(const std::string& instance, const std::string& model, bool up);
  void set_instance_slots(const std::string& instance, int slots);
  void set_queue_depth(const std::string& model, int depth);
  void observe_queue_wait(const std::string& model, double seconds);
  // A request moved off `instance` after it failed before the first byte.
  void add_retry(const std::string& model, const std::string& instance);
  // Tokens reported by engines in `usage`.
  void add_tokens(const std::string& model, long prompt_tokens, long completion_tokens);

  // Prometheus text exposition format.
  std::string render() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard::obs
