#include "advisor/backend_checks.h"

#include <fmt/format.h>
#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "advisor/prometheus_text.h"

namespace switchyard::advisor {
namespace {

namespace json = boost::json;

// Above this the engine has no room to admit what waits (vLLM's scheduler
// starts preempting as it approaches 100%).
constexpr double kv_near_full = 0.9;
// llama-server's own figure is inflated under concurrency (field report: 600+
// reported); 1.2 leaves room for the wall-time window's edges.
constexpr double overreport_ratio = 1.2;
// Below half the drafts accepted, the draft model's work is mostly wasted.
constexpr double low_acceptance = 0.5;
// The field report saw speculative decoding halve throughput at N=4.
constexpr double batched_requests = 4;

struct Names {
  const char* preemptions;
  const char* waiting;
  const char* running;
  const char* kv_usage;
  const char* kv_usage_old;
  const char* generated;
  const char* draft_tokens;
  const char* accepted_tokens;
};

constexpr Names vllm_names{"vllm:num_preemptions_total",
                           "vllm:num_requests_waiting",
                           "vllm:num_requests_running",
                           "vllm:kv_cache_usage_perc",
                           "vllm:gpu_cache_usage_perc",
                           "vllm:generation_tokens_total",
                           "vllm:spec_decode_num_draft_tokens_total",
                           "vllm:spec_decode_num_accepted_tokens_total"};

constexpr Names llama_names{"",
                            "llamacpp:requests_deferred",
                            "llamacpp:requests_processing",
                            "llamacpp:kv_cache_usage_ratio",
                            "",
                            "llamacpp:tokens_predicted_total",
                            "llamacpp:spec_decode_num_draft_tokens_total",
                            "llamacpp:spec_decode_num_accepted_tokens_total"};

std::optional<json::value> parse_json(const std::optional<std::string>& body) {
  if (!body) return std::nullopt;
  boost::system::error_code ec;
  json::value v = json::parse(*body, ec);
  if (ec) return std::nullopt;
  return v;
}

std::optional<double> number_at(const json::value& v, std::initializer_list<const char*> path) {
  const json::value* at = &v;
  for (const char* key : path) {
    const json::object* obj = at->if_object();
    if (!obj) return std::nullopt;
    auto it = obj->find(key);
    if (it == obj->end()) return std::nullopt;
    at = &it->value();
  }
  if (at->is_int64()) return static_cast<double>(at->as_int64());
  if (at->is_uint64()) return static_cast<double>(at->as_uint64());
  if (at->is_double()) return at->as_double();
  return std::nullopt;
}

class Analysis {
 public:
  Analysis(const BackendObservation& obs, MetricsText first, MetricsText second,
           BackendReport& report)
      : obs_(obs), m1_(std::move(first)), m2_(std::move(second)), report_(report) {}

  void run() {
    if (m2_.has_prefix("vllm:")) {
      report_.engine = Engine::vllm;
    } else if (m2_.has_prefix("llamacpp:")) {
      report_.engine = Engine::llama_cpp;
    } else {
      note("backend.engine",
           fmt::format("{}/metrics carries no vllm: or llamacpp: metrics: not an engine doctor "
                       "knows (a proxy?), so only reachability was checked.",
                       obs_.url));
      return;
    }
    const Names& n = report_.engine == Engine::vllm ? vllm_names : llama_names;
    if (counters_went_back(n)) return;
    throughput(n);
    if (report_.engine == Engine::vllm) preemptions(n);
    waiting_with_full_kv(n);
    speculative_decoding(n);
    if (report_.engine == Engine::vllm) {
      prefix_cache();
      vllm_capacity(n);
      latency_histograms();
    } else {
      llama_self_report(n);
      llama_slots();
    }
  }

 private:
  void note(const std::string& check, std::string message) {
    report_.findings.push_back({Severity::note, check, obs_.url, std::move(message)});
  }
  void warn(const std::string& check, std::string message) {
    report_.findings.push_back({Severity::warning, check, obs_.url, std::move(message)});
  }
  void measure(std::string name, double value, std::string unit) {
    report_.measurements.push_back({std::move(name), value, std::move(unit)});
  }

  std::optional<double> delta(const char* name) const {
    auto a = m1_.sum(name);
    auto b = m2_.sum(name);
    if (!a || !b) return std::nullopt;
    return *b - *a;
  }

  double window() const { return obs_.window_seconds; }

  // A restart between the scrapes makes every delta meaningless.
  bool counters_went_back(const Names& n) {
    for (const char* name : {n.generated, n.preemptions}) {
      if (*name == '\0') continue;
      if (auto d = delta(name); d && *d < 0) {
        warn("backend.restarted",
             fmt::format("{} went backwards between the two scrapes: the engine restarted "
                         "during the window. Rerun doctor once it is stable.",
                         name));
        return true;
      }
    }
    return false;
  }

  // Tokens the busy slots of one /slots answer have decoded so far; nullopt
  // without /slots (llama-server --no-slots) or a slot without n_decoded.
  static std::optional<double> decoding(const std::optional<std::string>& slots) {
    auto v = parse_json(slots);
    if (!v || !v->is_array()) return std::nullopt;
    double sum = 0;
    for (const auto& slot : v->as_array()) {
      const json::object* o = slot.if_object();
      if (!o) return std::nullopt;
      const json::value* busy = o->if_contains("is_processing");
      if (!busy || !busy->is_bool() || !busy->as_bool()) continue;
      // next_token[0].n_decoded in current builds, n_decoded at the top in older ones.
      std::optional<double> n = number_at(slot, {"n_decoded"});
      if (const json::value* next = o->if_contains("next_token");
          !n && next && next->is_array() && !next->as_array().empty())
        n = number_at(next->as_array()[0], {"n_decoded"});
      if (!n) return std::nullopt;
      sum += *n;
    }
    return sum;
  }

  // Tokens generated during the window. llama-server adds a request's tokens
  // to tokens_predicted_total only when it finishes, so a server busy with
  // long requests would look idle: the busy slots' n_decoded at each end
  // correct it (what was decoded before the window comes off, what is decoded
  // but not finished goes on). Without /slots the figure is exact only when
  // nothing was running at either end; else nullopt, and a note says so.
  std::optional<double> generated_in_window(const Names& n) {
    auto finished = delta(n.generated);
    if (!finished || report_.engine != Engine::llama_cpp) return finished;
    const auto before = decoding(obs_.first.slots);
    const auto after = decoding(obs_.second.slots);
    if (before && after) return *finished + *after - *before;
    if (m1_.sum(n.running).value_or(0) == 0 && m2_.sum(n.running).value_or(0) == 0) return finished;
    if (!unavailable_noted_) {
      unavailable_noted_ = true;
      note("backend.generation",
           "Generation over the window is unavailable: llama-server counts "
           "tokens_predicted_total only when a request finishes, requests were running, and "
           "/slots (n_decoded) could not be read (started with --no-slots?). Rerun doctor with "
           "/slots enabled, or measure with switchyard bench.");
    }
    return std::nullopt;
  }

  void throughput(const Names& n) {
    auto generated = generated_in_window(n);
    if (generated && window() > 0) {
      measure("generation_tokens_per_s", *generated / window(), "tok/s");
    }
    if (auto running = m2_.sum(n.running)) measure("requests_running", *running, "requests");
  }

  // vLLM's /v1/models lists each served model with its max_model_len.
  std::optional<double> served_max_model_len() const {
    if (auto models = parse_json(obs_.models); models && models->is_object()) {
      const json::value* data = models->as_object().if_contains("data");
      if (data && data->is_array() && !data->as_array().empty()) {
        auto len = number_at(data->as_array()[0], {"max_model_len"});
        if (len && *len > 0) return len;
      }
    }
    return std::nullopt;
  }

  // What to lower, from the engine's current settings: a limit already below
  // the usual advice is not advised again.
  std::string preemption_advice() const {
    constexpr double kAgentSeqs = 12, kLongContext = 96 * 1024;
    std::vector<std::string> lower;
    if (obs_.max_num_seqs && *obs_.max_num_seqs <= kAgentSeqs)
      lower.push_back(fmt::format("--max-num-seqs (now {}, halve it)", *obs_.max_num_seqs));
    else if (obs_.max_num_seqs)
      lower.push_back(
          fmt::format("--max-num-seqs (now {}; 8–12 for agent sessions)", *obs_.max_num_seqs));
    else
      lower.push_back("--max-num-seqs (8–12 for agent sessions)");
    const auto len = served_max_model_len();
    if (!len)
      lower.push_back("--max-model-len (64K–96K)");
    else if (*len > kLongContext)
      lower.push_back(fmt::format("--max-model-len (now {:.0f}; 64K–96K)", *len));
    std::string advice = "Lower " + lower.front();
    if (lower.size() > 1) advice += " or " + lower[1];
    if (len && *len <= kLongContext)
      advice += fmt::format(
          " (--max-model-len is {:.0f} already: the pool itself is small for this load; raise "
          "--gpu-memory-utilization or add cards)",
          *len);
    return advice + ", and limit active sessions at the gateway.";
  }

  void preemptions(const Names& n) {
    auto total = m2_.sum(n.preemptions);
    if (!total) return;
    measure("preemptions_total", *total, "requests");
    const double d = delta(n.preemptions).value_or(0);
    if (d > 0) {
      warn("backend.preemptions",
           fmt::format("vLLM preempted {:.0f} requests during the {:.1f} s window ({:.0f} since "
                       "start): the KV pool cannot hold every running sequence, so requests are "
                       "evicted and recomputed and throughput collapses. {}",
                       d, window(), *total, preemption_advice()));
    } else if (*total > 0) {
      note("backend.preemptions",
           fmt::format("{:.0f} preemptions since start, none during the window: the KV pool "
                       "ran out earlier. If it recurs, lower --max-num-seqs or --max-model-len.",
                       *total));
    }
  }

  std::optional<double> kv_usage(const MetricsText& m, const Names& n) const {
    auto usage = m.max(n.kv_usage);
    if (!usage && *n.kv_usage_old) usage = m.max(n.kv_usage_old);
    return usage;
  }

  // One scrape's waiting requests and KV pool use.
  struct KvPoint {
    std::optional<double> waiting;
    std::optional<double> usage;
    auto rank() const {
      const bool full = waiting.value_or(0) > 0 && usage.value_or(0) >= kv_near_full;
      return std::tuple(full, waiting.value_or(0), usage.value_or(0));
    }
  };

  // The one KV-in-use figure of the report: the measurement, the waiting
  // note and the full-pool warning all show it, with the waiting count of the
  // same scrape. Of the two scrapes it is the one closer to trouble — waiting
  // with a full pool first, then more waiting, then fuller — so a finding
  // never cites a figure the table beside it contradicts.
  KvPoint kv_in_use(const Names& n) const {
    std::optional<KvPoint> worst;
    for (const MetricsText* m : {&m1_, &m2_}) {
      KvPoint p{m->sum(n.waiting), kv_usage(*m, n)};
      if (!p.waiting && !p.usage) continue;
      if (!worst || p.rank() > worst->rank()) worst = p;
    }
    return worst.value_or(KvPoint{});
  }

  void waiting_with_full_kv(const Names& n) {
    const KvPoint kv = kv_in_use(n);
    if (kv.usage) measure("kv_cache_usage", *kv.usage, "ratio");
    if (!kv.waiting) return;
    measure("requests_waiting", *kv.waiting, "requests");
    if (*kv.waiting <= 0) return;
    if (kv.usage && *kv.usage >= kv_near_full) {
      warn("backend.kv_full",
           fmt::format("{:.0f} requests are waiting while the KV pool is {:.0f}% full: the engine "
                       "is out of KV cache, not compute. Lower --max-model-len or the number of "
                       "sequences (--max-num-seqs / -np), or admit fewer sessions at the gateway.",
                       *kv.waiting, *kv.usage * 100));
    } else {
      note("backend.waiting",
           fmt::format("{:.0f} requests wait inside the engine{}: every sequence slot is busy. "
                       "Let the gateway queue instead (cap the instance at its slots), where the "
                       "queue can be fair.",
                       *kv.waiting,
                       kv.usage ? fmt::format(" with the KV pool at {:.0f}%", *kv.usage * 100)
                                : std::string()));
    }
  }

  void speculative_decoding(const Names& n) {
    auto drafted = delta(n.draft_tokens);
    auto accepted = delta(n.accepted_tokens);
    std::string span = "during the window";
    if (!drafted || *drafted <= 0) {
      drafted = m2_.sum(n.draft_tokens);
      accepted = m2_.sum(n.accepted_tokens);
      span = "since start";
    }
    if (!drafted || !accepted || *drafted <= 0) return;
    const double rate = *accepted / *drafted;
    measure("spec_decode_acceptance", rate, "ratio");
    if (rate < low_acceptance) {
      warn("backend.spec_decode",
           fmt::format("Speculative decoding accepted {:.0f}% of drafted tokens {}: most draft "
                       "work is wasted. Draft fewer tokens or turn it off and compare "
                       "tokens/wall; under batching it can hurt even at high acceptance.",
                       rate * 100, span));
      return;
    }
    const double running = m2_.sum(n.running).value_or(0);
    if (running >= batched_requests) {
      note("backend.spec_decode",
           fmt::format("Speculative decoding is on ({:.0f}% accepted) with {:.0f} requests "
                       "running: under batching it can cost more than it gains (the field report "
                       "measured 97 → 50 tok/s at 4 concurrent requests with MTP). Compare with it "
                       "off at your concurrency.",
                       rate * 100, running));
    }
  }

  void prefix_cache() {
    const char* queries = "vllm:prefix_cache_queries_total";
    const char* hits = "vllm:prefix_cache_hits_total";
    auto q = delta(queries);
    auto h = delta(hits);
    std::string span = "during the window";
    if (!q || *q <= 0) {
      q = m2_.sum(queries);
      h = m2_.sum(hits);
      span = "since start";
    }
    if (!q || !h || *q <= 0) return;
    measure("prefix_cache_hit_rate", *h / *q, "ratio");
    if (*h <= 0) {
      warn("backend.prefix_cache",
           fmt::format("The prefix cache was queried for {:.0f} tokens {} and hit none. This is "
                       "common on hybrid (Mamba + attention) models, where it caches nothing "
                       "reusable: measure once with --no-enable-prefix-caching, since agents that "
                       "resend their whole context gain nothing from it here.",
                       *q, span));
    }
  }

  void vllm_capacity(const Names& n) {
    const Sample* info = m2_.first("vllm:cache_config_info");
    if (!info) return;
    const std::string* blocks = info->label("num_gpu_blocks");
    const std::string* block_size = info->label("block_size");
    if (!blocks || !block_size) return;
    const double pool = std::atof(blocks->c_str()) * std::atof(block_size->c_str());
    if (pool <= 0) return;
    measure("kv_pool_tokens", pool, "tokens");

    const std::optional<double> max_model_len = served_max_model_len();
    if (!max_model_len) return;
    measure("max_model_len", *max_model_len, "tokens");
    const std::string pool_text =
        fmt::format("the pool holds {:.0f} tokens (num_gpu_blocks {} × block_size {})", pool,
                    *blocks, *block_size);

    if (obs_.max_num_seqs) {
      const double wanted = *obs_.max_num_seqs * *max_model_len;
      if (wanted > pool) {
        warn("backend.kv_capacity",
             fmt::format("--max-num-seqs {} × --max-model-len {:.0f} = {:.0f} tokens of KV, but "
                         "{}: long sessions on every slot cannot fit, so vLLM will preempt. "
                         "Lower either until the product fits (e.g. --max-num-seqs {:.0f} at this "
                         "length).",
                         *obs_.max_num_seqs, *max_model_len, wanted, pool_text,
                         std::max(1.0, std::floor(pool / *max_model_len))));
      }
      return;
    }
    const double full_length = pool / *max_model_len;
    const double running = std::max(m1_.sum(n.running).value_or(0), m2_.sum(n.running).value_or(0));
    if (running > full_length) {
      note("backend.kv_capacity",
           fmt::format("{:.0f} sequences are running, but {}: only {:.1f} sequences at the full "
                       "--max-model-len {:.0f}. Fine while contexts stay short; pass the engine's "
                       "--max-num-seqs to doctor (--max-num-seqs) to check the configured limit.",
                       running, pool_text, full_length, *max_model_len));
    }
  }

  void latency_histograms() {
    struct Family {
      const char* name;
      const char* label;
      const char* text;  // for people
    };
    for (const Family f : {Family{"vllm:time_to_first_token_seconds", "ttft", "TTFT"},
                           Family{"vllm:request_queue_time_seconds", "queue_time", "queue time"}}) {
      auto later = m2_.histogram(f.name);
      auto earlier = m1_.histogram(f.name);
      if (!later || !earlier) continue;
      const Histogram window_h = histogram_delta(*later, *earlier);
      if (window_h.count <= 0) continue;
      const auto mean = window_h.mean();
      const auto p90 = window_h.quantile(0.9);
      if (mean) measure(std::string(f.label) + "_mean_s", *mean, "s");
      if (p90) measure(std::string(f.label) + "_p90_s", *p90, "s");
      if (mean && p90 && *mean > *p90) explain_skew(f.text, window_h, *mean, *p90);
    }
  }

  // A mean above the p90 is no counting error: both come from the same
  // window's observations (sum / count, and the buckets). Say beside the
  // figures which it is: a few very slow requests (what the buckets prove
  // about the slowest tenth), a p90 past the largest bucket (a lower bound),
  // or a p90 interpolated inside the bucket that also holds the mean.
  void explain_skew(const char* what, const Histogram& h, double mean, double p90) {
    const double total = h.buckets.back().second;
    double lower = 0, upper = 0;  // the bucket holding the 90th percentile
    for (const auto& [bound, cumulative] : h.buckets) {
      if (cumulative >= 0.9 * total) {
        upper = bound;
        break;
      }
      lower = bound;
    }
    const std::string head = fmt::format(
        "{} mean {:.2f} s is above its p90 {:.2f} s over the {:.0f} requests of the window: ", what,
        mean, p90, h.count);
    if (std::isinf(upper)) {
      note("backend.latency_skew",
           head + fmt::format("the p90 lies beyond the histogram's largest bucket ({:g} s), so "
                              "{:.2f} s is only a lower bound of it.",
                              lower, p90));
    } else if (mean > upper) {
      // The fastest 90% took at most `upper` each; the slowest tenth carry the rest of the sum.
      const double slow = (h.sum - 0.9 * h.count * upper) / (0.1 * h.count);
      note("backend.latency_skew",
           head + fmt::format("not a statistics error, a few very slow requests (long prompts, or "
                              "requests queued behind them) skew it: the slowest 10% averaged at "
                              "least {:.2f} s.",
                              slow));
    } else {
      note("backend.latency_skew",
           head + fmt::format("the p90 is interpolated inside the bucket ({:g} s, {:g} s] that "
                              "also holds the mean, so the histogram cannot order them.",
                              lower, upper));
    }
  }

  void llama_self_report(const Names& n) {
    auto reported = m2_.sum("llamacpp:predicted_tokens_seconds");
    auto generated = generated_in_window(n);
    if (!reported || !generated) return;
    if (*generated <= 0 || window() <= 0) {
      note("backend.idle",
           fmt::format("No tokens were generated during the {:.1f} s window, so the self-reported "
                       "speed could not be checked: rerun doctor while it serves requests.",
                       window()));
      return;
    }
    const double measured = *generated / window();
    measure("self_reported_tokens_per_s", *reported, "tok/s");
    const double ratio = *reported / measured;
    if (ratio <= overreport_ratio) return;
    const bool busy_throughout =
        m1_.sum(n.running).value_or(0) > 0 && m2_.sum(n.running).value_or(0) > 0;
    const std::string head = fmt::format(
        "llama-server reports {:.1f} tok/s (llamacpp:predicted_tokens_seconds) but "
        "generated {:.1f} tok/s over the {:.1f} s window (tokens/wall), {:.1f}× less",
        *reported, measured, window(), ratio);
    if (busy_throughout) {
      warn("backend.self_report",
           head +
               ": its own figure is inflated, as under concurrency. Trust tokens/wall "
               "(switchyard bench) when comparing setups.");
    } else {
      note("backend.self_report",
           head +
               ", but it was idle at one end of the window, so the comparison is loose: "
               "measure under steady load (switchyard bench).");
    }
  }

  void llama_slots() {
    auto props = parse_json(obs_.second.props ? obs_.second.props : obs_.first.props);
    if (!props) return;
    auto n_ctx = number_at(*props, {"default_generation_settings", "n_ctx"});
    auto slots = number_at(*props, {"total_slots"});
    if (!n_ctx || !slots) return;
    measure("slots", *slots, "slots");
    measure("slot_context_tokens", *n_ctx, "tokens");
    if (auto busy = parse_json(obs_.second.slots); busy && busy->is_array()) {
      double processing = 0;
      for (const auto& slot : busy->as_array()) {
        const json::object* o = slot.if_object();
        if (o && o->contains("is_processing") && o->at("is_processing").is_bool() &&
            o->at("is_processing").as_bool()) {
          ++processing;
        }
      }
      measure("slots_busy", processing, "slots");
    }

    // Older builds publish the pool's fill: tokens held and the fraction of
    // the pool they are, hence the pool size.
    auto tokens = m2_.sum("llamacpp:kv_cache_tokens");
    auto ratio = m2_.max("llamacpp:kv_cache_usage_ratio");
    if (!tokens || !ratio || *ratio <= 0) return;
    const double pool = std::round(*tokens / *ratio);
    measure("kv_pool_tokens", pool, "tokens");
    const double wanted = *n_ctx * *slots;
    if (wanted > pool * 1.01) {
      warn(
          "backend.kv_capacity",
          fmt::format("{:.0f} slots × n_ctx {:.0f} = {:.0f} tokens, but the KV pool holds about "
                      "{:.0f}: the slots share one pool (unified KV cache), so long sessions on "
                      "every slot at once will not fit. Lower -np, or give each slot less context.",
                      *slots, *n_ctx, wanted, pool));
    }
  }

  bool unavailable_noted_ = false;
  const BackendObservation& obs_;
  MetricsText m1_;
  MetricsText m2_;
  BackendReport& report_;
};

}  // namespace

const char* to_string(Engine engine) {
  switch (engine) {
    case Engine::vllm:
      return "vllm";
    case Engine::llama_cpp:
      return "llama.cpp";
    case Engine::unknown:
      return "unknown";
  }
  return "unknown";
}

BackendReport analyze_backend(const BackendObservation& obs) {
  BackendReport report;
  report.url = obs.url;
  report.window_seconds = obs.window_seconds;
  if (!obs.first.metrics || !obs.second.metrics) {
    if (obs.first.props || obs.second.props) report.engine = Engine::llama_cpp;
    report.findings.push_back(
        {Severity::warning, "backend.metrics", obs.url,
         fmt::format("{}/metrics did not answer 200 on both scrapes, so nothing could be checked "
                     "(llama-server serves metrics only when started with --metrics).",
                     obs.url)});
    return report;
  }
  auto first = MetricsText::parse(*obs.first.metrics);
  auto second = MetricsText::parse(*obs.second.metrics);
  if (!first || !second) {
    report.findings.push_back({Severity::warning, "backend.metrics", obs.url,
                               fmt::format("Could not parse {}/metrics: {}", obs.url,
                                           (!first ? first.error() : second.error()).message)});
    return report;
  }
  Analysis(obs, std::move(first.value()), std::move(second.value()), report).run();
  return report;
}

}  // namespace switchyard::advisor
