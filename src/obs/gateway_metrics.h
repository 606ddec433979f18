// The gateway's Prometheus metrics. Label values are bounded: models and
// instances come from the config, statuses from HTTP.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "obs/generation_meter.h"
#include "obs/status.h"

namespace switchyard::obs {

// Used from the gateway's one I/O thread (its lookup cache is not locked).
class GatewayMetrics {
 public:
  GatewayMetrics();
  ~GatewayMetrics();
  GatewayMetrics(const GatewayMetrics&) = delete;
  GatewayMetrics& operator=(const GatewayMetrics&) = delete;

  // One finished request. `instance` is empty when none was chosen (refused
  // before routing). `outcome` says how it ended beyond the status line:
  // "ok", "error" (a 4xx/5xx answer), "upstream_failed" (the engine failed
  // after the first byte), "client_closed" (the client left first). Times in
  // seconds; ttfb < 0 when nothing was sent.
  void request_finished(const std::string& model, const std::string& instance, int status,
                        std::string_view outcome, double ttfb_seconds, double total_seconds);
  void observe_queue_wait(const std::string& model, double seconds);
  // A request moved off `instance` after it failed before the first byte.
  void add_retry(const std::string& model, const std::string& instance);
  // Tokens reported by engines in `usage`.
  void add_tokens(const std::string& model, long prompt_tokens, long completion_tokens);

  // Output tokens relayed, per instance, for the measured generation rate.
  GenerationMeter& generation();
  const GenerationMeter& generation() const;
  // Profiles: a switch ended; `to` is `from` again when it was rolled back.
  void profile_switched(const std::string& from, const std::string& to, const std::string& reason,
                        double seconds);
  // Models (docs/models.md): a load began for `reason` (request, admin); one
  // finished in `seconds`; an unload for `reason` (ttl, evicted, admin,
  // cancelled); whether a model is resident now; the bytes each GPU holds by
  // the gateway's figures.
  void model_load_started(const std::string& model, const std::string& reason);
  void model_loaded(const std::string& model, double seconds);
  void model_unloaded(const std::string& model, const std::string& reason);
  void model_resident(const std::string& model, bool resident);
  void gpu_memory_in_use(const std::string& gpu, std::uint64_t bytes);
  // Routing (gateway/routing): one decision of `policy` for `reason` (hit,
  // bounded-out, cold, session-moved, balanced), and the share of the
  // prompt's blocks cached where it went (match < 0: the policy does not
  // track prefixes, nothing observed), and how long the request waited for
  // its home before it (routing.home_wait; nullopt: it did not wait): it got
  // its home when the reason is hit, else it spilled.
  void route_decided(std::string_view policy, std::string_view reason, double match,
                     std::optional<double> home_waited);

  // Per API key, labelled by the key's name (never the key): one finished
  // request's outcome (as request_finished), the tokens its usage reported,
  // and, when the gateway refused it with a 429 or 403, the error code it
  // was refused with (`reason`; empty: not refused).
  void key_request_finished(std::string_view key, std::string_view outcome, long prompt_tokens,
                            long completion_tokens, long cached_tokens, std::string_view reason);
  // Redis of the shared limits (docs/keys.md, "Several gateways"): whether
  // it is reachable and how many gateways its heartbeat counts; each
  // command's outcome and time. No series until first called (no redis:).
  void set_redis_state(bool up, int gateways);
  void redis_command(bool ok, double seconds);

  // Prometheus text exposition format; the instance and queue gauges are
  // taken from `status`, so they describe the instances that exist now.
  // `per_key` false leaves the switchyard_key_* series out (their labels name
  // the keys: not for a scrape that presents none).
  std::string render(const StatusSnapshot& status, bool per_key = true) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace switchyard::obs
