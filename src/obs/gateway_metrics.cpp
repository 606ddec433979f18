#include "obs/gateway_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <map>
#include <tuple>
#include <unordered_map>

namespace switchyard::obs {

namespace {

// Buckets from 5 ms to 10 min: first bytes of cached prompts to long
// non-streamed generations.
prometheus::Histogram::BucketBoundaries latency_buckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
}

}  // namespace

struct GatewayMetrics::Impl {
  // The series of one request's outcome, found once per label combination:
  // building label maps and hashing them on every request costs more than
  // the rest of the accounting.
  struct Outcome {
    prometheus::Counter* requests;
    prometheus::Histogram* ttfb;
    prometheus::Histogram* duration;
  };
  Outcome& outcome(const std::string& model, const std::string& instance, int status,
                   std::string_view result);
  void seed(const StatusSnapshot& status);
  // Ordered by (model, instance, status, outcome) so that a lookup compares
  // the request's own strings instead of building a key per request.
  std::map<std::tuple<std::string, std::string, int, std::string>, Outcome, std::less<>> outcomes;
  struct Tokens {
    prometheus::Counter* prompt;
    prometheus::Counter* completion;
  };
  std::unordered_map<std::string, Tokens> tokens_by_model;
  Tokens& tokens_of(const std::string& model);

  prometheus::Registry registry;
  prometheus::Family<prometheus::Counter>& requests =
      prometheus::BuildCounter()
          .Name("switchyard_requests_total")
          .Help(
              "Requests answered, by model, instance, HTTP status and outcome "
              "(ok, error, upstream_failed, client_closed, shutting_down).")
          .Register(registry);
  prometheus::Family<prometheus::Histogram>& ttfb =
      prometheus::BuildHistogram()
          .Name("switchyard_time_to_first_byte_seconds")
          .Help("Time from the request's arrival to the first response byte sent to the client.")
          .Register(registry);
  prometheus::Family<prometheus::Histogram>& duration =
      prometheus::BuildHistogram()
          .Name("switchyard_request_duration_seconds")
          .Help("Time from the request's arrival to the end of its response.")
          .Register(registry);
  prometheus::Family<prometheus::Gauge>& in_flight =
      prometheus::BuildGauge()
          .Name("switchyard_instance_in_flight")
          .Help("Requests the gateway has in flight on each instance.")
          .Register(registry);
  prometheus::Family<prometheus::Gauge>& slots =
      prometheus::BuildGauge()
          .Name("switchyard_instance_slots")
          .Help("Requests each instance may run at once.")
          .Register(registry);
  prometheus::Family<prometheus::Gauge>& up =
      prometheus::BuildGauge()
          .Name("switchyard_instance_up")
          .Help("1 when the instance is ready to take requests, else 0.")
          .Register(registry);
  prometheus::Family<prometheus::Gauge>& queue_depth =
      prometheus::BuildGauge()
          .Name("switchyard_queue_depth")
          .Help("Requests waiting in the gateway for a free slot, by model.")
          .Register(registry);
  prometheus::Family<prometheus::Histogram>& queue_wait =
      prometheus::BuildHistogram()
          .Name("switchyard_queue_wait_seconds")
          .Help("Time queued requests waited for a slot (granted or not).")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& retries =
      prometheus::BuildCounter()
          .Name("switchyard_retries_total")
          .Help("Requests moved to another instance after failing before the first byte.")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& tokens =
      prometheus::BuildCounter()
          .Name("switchyard_tokens_total")
          .Help("Tokens engines reported in usage, by model and kind (prompt, completion).")
          .Register(registry);

  // The console's block: measured generation and the live advisor.
  GenerationMeter generation;
  prometheus::Family<prometheus::Gauge>& generation_rate =
      prometheus::BuildGauge()
          .Name("switchyard_generation_tokens_per_second")
          .Help(
              "Output tokens per second streamed through the gateway from each instance, over "
              "the last 10 s.")
          .Register(registry);
  prometheus::Family<prometheus::Gauge>& findings =
      prometheus::BuildGauge()
          .Name("switchyard_advisor_finding")
          .Help("1 for each finding of the live advisor in force, by check, instance, severity.")
          .Register(registry);
  std::vector<prometheus::Gauge*> finding_series;  // removed and re-added per render
  // Profiles (docs/profiles.md).
  prometheus::Family<prometheus::Gauge>& profile_active =
      prometheus::BuildGauge()
          .Name("switchyard_profile_active")
          .Help("1 for the active profile, 0 for the others.")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& profile_switches =
      prometheus::BuildCounter()
          .Name("switchyard_profile_switches_total")
          .Help(
              "Profile switches that ended, by from, to (from again when rolled back) and reason "
              "(manual, queue, huge_prompt, idle).")
          .Register(registry);
  prometheus::Family<prometheus::Histogram>& profile_switch_seconds =
      prometheus::BuildHistogram()
          .Name("switchyard_profile_switch_seconds")
          .Help("Time a profile switch took, drain to warm-up (rolled back ones included).")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& model_loads =
      prometheus::BuildCounter()
          .Name("switchyard_model_loads_total")
          .Help("Loads of on-demand models begun, by model and reason (request, admin).")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& model_unloads =
      prometheus::BuildCounter()
          .Name("switchyard_model_unloads_total")
          .Help(
              "Unloads of on-demand models, by model and reason (ttl, evicted, admin, cancelled).")
          .Register(registry);
  prometheus::Family<prometheus::Histogram>& model_load_seconds =
      prometheus::BuildHistogram()
          .Name("switchyard_model_load_seconds")
          .Help("Time a model's load took, start to healthy.")
          .Register(registry);
  prometheus::Family<prometheus::Gauge>& model_resident =
      prometheus::BuildGauge()
          .Name("switchyard_model_resident")
          .Help("1 while an on-demand model has a loaded instance, else 0.")
          .Register(registry);
  prometheus::Family<prometheus::Gauge>& gpu_memory =
      prometheus::BuildGauge()
          .Name("switchyard_gpu_memory_estimated_bytes")
          .Help(
              "Memory each GPU holds by the gateway's figures (declared or estimated) for the "
              "instances loaded on it.")
          .Register(registry);
  prometheus::Family<prometheus::Gauge>& admin_state =
      prometheus::BuildGauge()
          .Name("switchyard_instance_admin_state")
          .Help("1 for each instance's admin state (active, draining, parked), 0 for the others.")
          .Register(registry);

  // Per key (docs/keys.md): series found once per key and label value; keys
  // are the config's and the key store's, outcomes and codes fixed sets.
  struct KeySeries {
    std::map<std::string, prometheus::Counter*, std::less<>> requests;    // by outcome
    std::map<std::string, prometheus::Counter*, std::less<>> rejections;  // by reason
    prometheus::Counter* prompt = nullptr;
    prometheus::Counter* completion = nullptr;
    prometheus::Counter* cached = nullptr;
  };
  std::map<std::string, KeySeries, std::less<>> keys;
  prometheus::Family<prometheus::Counter>& key_requests =
      prometheus::BuildCounter()
          .Name("switchyard_key_requests_total")
          .Help(
              "Requests by API key name and outcome (ok, error, upstream_failed, client_closed, "
              "shutting_down).")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& key_tokens =
      prometheus::BuildCounter()
          .Name("switchyard_key_tokens_total")
          .Help(
              "Tokens charged, by API key name and kind (prompt, completion, cached: the part of "
              "prompt served from the prefix cache): the engines' usage, or a stream cut short's "
              "relayed tokens.")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& key_rejections =
      prometheus::BuildCounter()
          .Name("switchyard_key_rejections_total")
          .Help(
              "Requests the gateway refused with a 429 or 403, by API key name and reason (the "
              "error code: rate_limit_exceeded, budget_exceeded, concurrency_limit_exceeded, "
              "session_limit_exceeded, model_not_allowed, queue_full).")
          .Register(registry);

  // Routing: found once per (policy, reason); both sets are small and fixed.
  std::map<std::tuple<std::string, std::string>, prometheus::Counter*, std::less<>> decisions_by;
  prometheus::Histogram* match_ratio = nullptr;
  std::map<std::tuple<std::string, bool>, prometheus::Histogram*, std::less<>> home_waits_by;
  prometheus::Family<prometheus::Counter>& decisions =
      prometheus::BuildCounter()
          .Name("switchyard_route_decisions_total")
          .Help(
              "Routing decisions by policy and reason (hit, bounded-out, cold, session-moved, "
              "balanced).")
          .Register(registry);
  prometheus::Family<prometheus::Histogram>& match =
      prometheus::BuildHistogram()
          .Name("switchyard_route_prefix_match_ratio")
          .Help("Share of a routed prompt's blocks last sent to the instance chosen.")
          .Register(registry);
  prometheus::Family<prometheus::Histogram>& home_wait =
      prometheus::BuildHistogram()
          .Name("switchyard_route_home_wait_seconds")
          .Help(
              "How long requests waited for their busy home (routing.home_wait), by policy and "
              "outcome: home (it got its home) or spilled (it went elsewhere at the bound).")
          .Register(registry);

  // Redis of the shared limits: series made on first use.
  prometheus::Family<prometheus::Gauge>& redis_up_family =
      prometheus::BuildGauge()
          .Name("switchyard_redis_up")
          .Help("1 while the Redis of the shared limits is reachable, else 0.")
          .Register(registry);
  prometheus::Family<prometheus::Gauge>& redis_gateways_family =
      prometheus::BuildGauge()
          .Name("switchyard_redis_gateways")
          .Help("Gateways sharing the limits, as the last heartbeat in Redis counted them.")
          .Register(registry);
  prometheus::Family<prometheus::Counter>& redis_commands_family =
      prometheus::BuildCounter()
          .Name("switchyard_redis_commands_total")
          .Help("Redis commands by result: ok (answered) or error (no answer, timeout).")
          .Register(registry);
  prometheus::Family<prometheus::Histogram>& redis_seconds_family =
      prometheus::BuildHistogram()
          .Name("switchyard_redis_command_seconds")
          .Help("Time from sending a Redis command to its answer.")
          .Register(registry);
  prometheus::Gauge* redis_up = nullptr;
  prometheus::Gauge* redis_gateways = nullptr;
  prometheus::Counter* redis_ok = nullptr;
  prometheus::Counter* redis_errors = nullptr;
  prometheus::Histogram* redis_seconds = nullptr;
};

GatewayMetrics::GatewayMetrics() : impl_(std::make_unique<Impl>()) {}
GatewayMetrics::~GatewayMetrics() = default;

GatewayMetrics::Impl::Outcome& GatewayMetrics::Impl::outcome(const std::string& model,
                                                             const std::string& instance,
                                                             int status, std::string_view result) {
  auto it = outcomes.find(std::forward_as_tuple(model, instance, status, result));
  if (it != outcomes.end()) return it->second;
  const std::map<std::string, std::string> where{{"model", model}};
  Outcome o{&requests.Add({{"model", model},
                           {"instance", instance},
                           {"status", std::to_string(status)},
                           {"outcome", std::string(result)}}),
            &ttfb.Add(where, latency_buckets()), &duration.Add(where, latency_buckets())};
  return outcomes.emplace(std::make_tuple(model, instance, status, std::string(result)), o)
      .first->second;
}

void GatewayMetrics::request_finished(const std::string& model, const std::string& instance,
                                      int status, std::string_view result, double ttfb_seconds,
                                      double total_seconds) {
  auto& o = impl_->outcome(model, instance, status, result);
  o.requests->Increment();
  if (ttfb_seconds >= 0) o.ttfb->Observe(ttfb_seconds);
  o.duration->Observe(total_seconds);
}

void GatewayMetrics::observe_queue_wait(const std::string& model, double seconds) {
  impl_->queue_wait.Add({{"model", model}}, latency_buckets()).Observe(seconds);
}

void GatewayMetrics::add_retry(const std::string& model, const std::string& instance) {
  impl_->retries.Add({{"model", model}, {"instance", instance}}).Increment();
}

GatewayMetrics::Impl::Tokens& GatewayMetrics::Impl::tokens_of(const std::string& model) {
  auto it = tokens_by_model.find(model);
  if (it == tokens_by_model.end()) {
    Tokens t{&tokens.Add({{"model", model}, {"kind", "prompt"}}),
             &tokens.Add({{"model", model}, {"kind", "completion"}})};
    it = tokens_by_model.emplace(model, t).first;
  }
  return it->second;
}

void GatewayMetrics::add_tokens(const std::string& model, long prompt_tokens,
                                long completion_tokens) {
  auto& t = impl_->tokens_of(model);
  if (prompt_tokens > 0) t.prompt->Increment(prompt_tokens);
  if (completion_tokens > 0) t.completion->Increment(completion_tokens);
}

GenerationMeter& GatewayMetrics::generation() {
  return impl_->generation;
}
const GenerationMeter& GatewayMetrics::generation() const {
  return impl_->generation;
}

void GatewayMetrics::profile_switched(const std::string& from, const std::string& to,
                                      const std::string& reason, double seconds) {
  impl_->profile_switches.Add({{"from", from}, {"to", to}, {"reason", reason}}).Increment();
  impl_->profile_switch_seconds.Add({}, latency_buckets()).Observe(seconds);
}

void GatewayMetrics::model_load_started(const std::string& model, const std::string& reason) {
  impl_->model_loads.Add({{"model", model}, {"reason", reason}}).Increment();
}

void GatewayMetrics::model_loaded(const std::string& model, double seconds) {
  impl_->model_load_seconds
      .Add({{"model", model}},
           prometheus::Histogram::BucketBoundaries{1, 2, 5, 10, 20, 30, 60, 120, 300, 600})
      .Observe(seconds);
}

void GatewayMetrics::model_unloaded(const std::string& model, const std::string& reason) {
  impl_->model_unloads.Add({{"model", model}, {"reason", reason}}).Increment();
}

void GatewayMetrics::model_resident(const std::string& model, bool resident) {
  impl_->model_resident.Add({{"model", model}}).Set(resident ? 1 : 0);
}

void GatewayMetrics::gpu_memory_in_use(const std::string& gpu, std::uint64_t bytes) {
  impl_->gpu_memory.Add({{"gpu", gpu}}).Set(static_cast<double>(bytes));
}

void GatewayMetrics::route_decided(std::string_view policy, std::string_view reason, double match,
                                   std::optional<double> home_waited) {
  auto& m = *impl_;
  if (home_waited) {
    const bool got_home = reason == "hit";
    auto w = m.home_waits_by.find(std::forward_as_tuple(policy, got_home));
    if (w == m.home_waits_by.end()) {
      auto* h = &m.home_wait.Add(
          {{"policy", std::string(policy)}, {"outcome", got_home ? "home" : "spilled"}},
          prometheus::Histogram::BucketBoundaries{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30});
      w = m.home_waits_by.emplace(std::make_tuple(std::string(policy), got_home), h).first;
    }
    w->second->Observe(*home_waited);
  }
  auto it = m.decisions_by.find(std::forward_as_tuple(policy, reason));
  if (it == m.decisions_by.end()) {
    auto* c = &m.decisions.Add({{"policy", std::string(policy)}, {"reason", std::string(reason)}});
    it = m.decisions_by.emplace(std::make_tuple(std::string(policy), std::string(reason)), c).first;
  }
  it->second->Increment();
  if (match < 0) return;
  if (!m.match_ratio)
    m.match_ratio = &m.match.Add(
        {}, prometheus::Histogram::BucketBoundaries{0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1});
  m.match_ratio->Observe(match);
}

void GatewayMetrics::key_request_finished(std::string_view key, std::string_view outcome,
                                          long prompt_tokens, long completion_tokens,
                                          long cached_tokens, std::string_view reason) {
  auto& m = *impl_;
  auto it = m.keys.find(key);
  if (it == m.keys.end()) {
    const std::string name(key);
    Impl::KeySeries k;
    k.prompt = &m.key_tokens.Add({{"key", name}, {"kind", "prompt"}});
    k.completion = &m.key_tokens.Add({{"key", name}, {"kind", "completion"}});
    k.cached = &m.key_tokens.Add({{"key", name}, {"kind", "cached"}});
    it = m.keys.emplace(name, std::move(k)).first;
  }
  auto& k = it->second;
  const auto series = [&](auto& by, auto& family, const char* label, std::string_view value) {
    auto s = by.find(value);
    if (s == by.end())
      s = by.emplace(std::string(value),
                     &family.Add({{"key", it->first}, {label, std::string(value)}}))
              .first;
    return s->second;
  };
  series(k.requests, m.key_requests, "outcome", outcome)->Increment();
  if (!reason.empty()) series(k.rejections, m.key_rejections, "reason", reason)->Increment();
  if (prompt_tokens > 0) k.prompt->Increment(prompt_tokens);
  if (completion_tokens > 0) k.completion->Increment(completion_tokens);
  if (cached_tokens > 0) k.cached->Increment(cached_tokens);
}

void GatewayMetrics::set_redis_state(bool up, int gateways) {
  auto& m = *impl_;
  if (!m.redis_up) {
    m.redis_up = &m.redis_up_family.Add({});
    m.redis_gateways = &m.redis_gateways_family.Add({});
  }
  m.redis_up->Set(up ? 1 : 0);
  m.redis_gateways->Set(gateways);
}

void GatewayMetrics::redis_command(bool ok, double seconds) {
  auto& m = *impl_;
  if (!m.redis_ok) {
    m.redis_ok = &m.redis_commands_family.Add({{"result", "ok"}});
    m.redis_errors = &m.redis_commands_family.Add({{"result", "error"}});
    m.redis_seconds = &m.redis_seconds_family.Add(
        {}, prometheus::Histogram::BucketBoundaries{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1});
  }
  (ok ? m.redis_ok : m.redis_errors)->Increment();
  if (ok) m.redis_seconds->Observe(seconds);
}

// The documented series that count or time what has yet to happen exist at 0
// from the first scrape (a dashboard's rate() over a series that appears
// with its first event misses that event; an absent one reads as broken):
// per model and instance, with the labels of a request served as asked.
void GatewayMetrics::Impl::seed(const StatusSnapshot& status) {
  for (const auto& inst : status.instances) {
    outcome(inst.model, inst.name, 200, "ok");
    retries.Add({{"model", inst.model}, {"instance", inst.name}});
  }
  for (const auto& model : status.models) {
    queue_wait.Add({{"model", model.name}}, latency_buckets());
    tokens_of(model.name);
  }
  if (!status.profiles.empty()) profile_switch_seconds.Add({}, latency_buckets());
}

std::string GatewayMetrics::render(const StatusSnapshot& status, bool per_key) const {
  auto& m = *impl_;
  m.seed(status);
  for (const auto& p : status.profiles)
    m.profile_active.Add({{"profile", p.name}}).Set(p.active ? 1 : 0);
  for (const auto& inst : status.instances)
    for (const char* state : {"active", "draining", "parked"})
      m.admin_state.Add({{"instance", inst.name}, {"state", state}})
          .Set(inst.admin == state ? 1 : 0);
  for (const auto& inst : status.instances) {
    m.up.Add({{"instance", inst.name}, {"model", inst.model}}).Set(inst.routable ? 1 : 0);
    m.slots.Add({{"instance", inst.name}}).Set(inst.slots);
    m.in_flight.Add({{"instance", inst.name}}).Set(inst.in_flight);
  }
  for (const auto& model : status.models)
    m.queue_depth.Add({{"model", model.name}}).Set(model.queued);
  for (const auto& inst : status.instances)
    m.generation_rate.Add({{"instance", inst.name}}).Set(inst.tokens_per_second);
  for (auto* series : m.finding_series) m.findings.Remove(series);
  m.finding_series.clear();
  for (const auto& f : status.findings)
    m.finding_series.push_back(
        &m.findings.Add({{"check", f.check}, {"instance", f.instance}, {"severity", f.severity}}));
  for (auto* series : m.finding_series) series->Set(1);
  auto families = m.registry.Collect();
  if (!per_key)
    std::erase_if(families, [](const prometheus::MetricFamily& f) {
      return f.name.starts_with("switchyard_key_");
    });
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace switchyard::obs
