#include "sim/vllm_api.h"

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <cmath>
#include <random>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "sim/completion.h"
#include "sim/response_store.h"
#include "sim/responses_format.h"
#include "sim/transcription.h"
#include "sim/vllm_format.h"

namespace switchyard::sim {

namespace net = boost::asio;
namespace json = boost::json;
using net::awaitable;
using vllm::error_reply;
using vllm::json_reply;

namespace {

http::Response bad_request(const RequestError& e) {
  const std::string_view type = !e.type.empty()   ? std::string_view(e.type)
                                : e.status >= 500 ? "InternalServerError"
                                                  : "BadRequestError";
  return error_reply(e.status, e.message, type, e.param);
}

// serving_responses.py's _make_not_found_error.
RequestError response_not_found(std::string_view id) {
  return RequestError{404, fmt::format("Response with id '{}' not found.", id), "response_id",
                      "invalid_request_error"};
}

// A number as Python's prometheus_client writes it (repr of a float).
std::string prom(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.1f}", v);
  return fmt::format("{}", v);
}

class MetricsText {
 public:
  explicit MetricsText(std::string labels) : labels_(std::move(labels)) {}

  void family(std::string_view name, std::string_view help, std::string_view type) {
    out_ += fmt::format("# HELP {0} {1}\n# TYPE {0} {2}\n", name, help, type);
  }
  void sample(std::string_view name, double value, std::string_view extra = {}) {
    out_ += fmt::format("{}{{{}{}{}}} {}\n", name, labels_, extra.empty() ? "" : ",", extra,
                        prom(value));
  }
  void gauge(std::string_view name, std::string_view help, double value) {
    family(name, help, "gauge");
    sample(name, value);
  }
  // Counters are declared without their _total suffix, as prometheus_client does.
  void counter(std::string_view name, std::string_view help, double value) {
    family(name, help, "counter");
    sample(fmt::format("{}_total", name), value);
  }
  void histogram(std::string_view name, std::string_view help, const Histogram& h) {
    family(name, help, "histogram");
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < h.counts.size(); ++i) {
      cumulative += h.counts[i];
      const double le = i < h.bounds.size() ? h.bounds[i] : INFINITY;
      sample(fmt::format("{}_bucket", name), static_cast<double>(cumulative),
             fmt::format("le=\"{}\"", prom(le)));
    }
    sample(fmt::format("{}_count", name), static_cast<double>(h.count));
    sample(fmt::format("{}_sum", name), h.sum);
  }
  std::string take() { return std::move(out_); }

 private:
  const std::string labels_;
  std::string out_;
};

}  // namespace

struct VllmApi::Impl {
  Impl(Engine& e, VllmApiOptions o)
      : engine(e),
        options(std::move(o)),
        faults(options.faults),
        runner(engine, faults),
        id_rng(e.options().seed ^ 0x5bd1e995ull),
        created(std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count()) {}

  awaitable<void> handle(http::Request& request, http::Exchange& exchange);
  awaitable<std::optional<http::Response>> sleep_endpoint(const http::Request& request);
  http::Response respond_now(const http::Request& request, std::optional<CompletionJob>& job);
  std::variant<CompletionJob, http::Response> parse_job(Endpoint endpoint,
                                                        const json::object& body) const;
  std::variant<CompletionJob, RequestError> parse_response_job(const json::object& body) const;
  // GET /v1/responses/{id} and POST /v1/responses/{id}/cancel; nullopt for
  // other paths.
  std::optional<http::Response> stored_response(std::string_view path,
                                                std::string_view method) const;
  void keep(const json::object& response, std::vector<Token> context);
  http::Response models() const;
  http::Response metrics() const;
  http::Response tokenize(const json::object& body) const;
  http::Response detokenize(const json::object& body) const;
  std::string new_id();

  Engine& engine;
  const VllmApiOptions options;
  Faults faults;
  CompletionRunner runner;
  std::mt19937_64 id_rng;
  const std::int64_t created;
  bool asleep = false;
  ResponseStore stored;
};

VllmApi::VllmApi(Engine& engine, VllmApiOptions options)
    : impl_(std::make_unique<Impl>(engine, std::move(options))) {}
VllmApi::~VllmApi() = default;

awaitable<void> VllmApi::handle(http::Request& request, http::Exchange& exchange) {
  return impl_->handle(request, exchange);
}

http::Response VllmApi::protocol_error(int status, std::string message, std::string_view) {
  return error_reply(status, message, status >= 500 ? "InternalServerError" : "BadRequestError");
}

std::string VllmApi::Impl::new_id() {
  return fmt::format("{:016x}{:016x}", id_rng(), id_rng());
}

// vllm/entrypoints/serve/sleep/api_router.py: POST /sleep (query level,
// default 1) and POST /wake_up answer an empty 200; GET /is_sleeping
// answers {"is_sleeping": bool}.
awaitable<std::optional<http::Response>> VllmApi::Impl::sleep_endpoint(
    const http::Request& request) {
  const auto path = request.head.path();
  const auto& method = request.head.method;
  std::optional<http::Response> reply;
  if (path == "/is_sleeping" && method == "GET") {
    reply = json_reply(200, json::object{{"is_sleeping", asleep}});
  } else if (path == "/sleep" && method == "POST") {
    const std::string_view target = request.head.target;
    const auto q = target.find("level=");
    const auto level =
        q == std::string_view::npos ? std::string_view("1") : target.substr(q + 6, 1);
    if (level != "1" && level != "2") {
      reply = error_reply(400, "level must be 1 or 2", "BadRequestError", "level");
    } else {
      asleep = true;
      reply = json_reply(200, nullptr);
      reply->body.clear();
    }
  } else if (path == "/wake_up" && method == "POST") {
    if (asleep && options.wake_seconds > 0) {
      net::steady_timer t(co_await net::this_coro::executor);
      t.expires_after(std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::duration<double>(options.wake_seconds)));
      co_await t.async_wait(net::as_tuple(net::use_awaitable));
    }
    asleep = false;
    reply = json_reply(200, nullptr);
    reply->body.clear();
  } else if (asleep && method == "POST" &&
             (path == "/v1/chat/completions" || path == "/v1/completions")) {
    reply =
        error_reply(503, "The engine is sleeping; POST /wake_up first", "ServiceUnavailableError");
  }
  co_return reply;
}

awaitable<void> VllmApi::Impl::handle(http::Request& request, http::Exchange& exchange) {
  if (options.sleep_mode && !runner.loading()) {
    std::optional<http::Response> slept = co_await sleep_endpoint(request);
    if (slept) {
      co_await exchange.respond(std::move(*slept));
      co_return;
    }
  }
  // vLLM parents its request span on the caller's W3C trace context
  // (vllm/tracing.py, extract_trace_context); the sim exports no spans, so
  // it logs the context it would use, for tests and operators to follow.
  if (auto parent = request.head.headers.find("traceparent"))
    spdlog::info("request {} {} traceparent={}",
                 request.head.headers.find("x-request-id").value_or("-"), request.head.path(),
                 *parent);
  std::optional<CompletionJob> job;
  http::Response reply = runner.loading() ? http::Response() : respond_now(request, job);
  const CompletionRunner::Unavailable unavailable = [](std::string_view message) {
    return error_reply(503, message, "ServiceUnavailableError");
  };
  const CompletionRunner::MakeFormat make_format = [this](const CompletionJob& j,
                                                          std::int64_t created) {
    std::function<void(const json::object&, const CompletionResult&)> keep_it;
    if (j.store_response)
      keep_it = [this, context = j.prompt](const json::object& response,
                                           const CompletionResult& r) mutable {
        context.insert(context.end(), r.tokens.begin(), r.tokens.end());
        keep(response, std::move(context));  // a format finishes once
      };
    return vllm::make_format(j, new_id(), created, std::move(keep_it));
  };
  co_await runner.answer(std::move(job), std::move(reply), unavailable, make_format, exchange);
}

http::Response VllmApi::Impl::respond_now(const http::Request& request,
                                          std::optional<CompletionJob>& job) {
  const std::string path(request.head.path());
  const std::string& method = request.head.method;
  if (method == "GET") {
    if (path == "/health") {
      http::Response r = json_reply(200, nullptr);
      r.body.clear();  // vLLM's /health is an empty 200
      return r;
    }
    if (path == "/v1/models") return models();
    if (path == "/metrics") return metrics();
    if (path == "/version") return json_reply(200, json::object{{"version", "0.10.1"}});
  }
  if (auto reply = stored_response(path, method)) return std::move(*reply);
  if (method == "POST" && is_transcription_path(path)) {
    auto heard = transcribe(request, engine.tokenizer());
    if (auto* e = std::get_if<RequestError>(&heard)) return bad_request(*e);
    return transcription_reply(std::get<Transcription>(heard), &json_reply);
  }
  std::optional<Endpoint> endpoint;
  if (path == "/v1/chat/completions") endpoint = Endpoint::chat;
  if (path == "/v1/completions") endpoint = Endpoint::text;
  if (path == "/v1/responses") endpoint = Endpoint::responses;
  const bool other = path == "/tokenize" || path == "/detokenize";
  if (method != "POST" || (!endpoint && !other)) {
    // FastAPI's own 404 shape.
    http::Response r = json_reply(404, json::object{{"detail", "Not Found"}});
    return r;
  }
  boost::system::error_code ec;
  json::value parsed = json::parse(request.body, ec);
  if (ec || !parsed.is_object()) {
    std::string why = ec ? ec.message() : "the request body is not a JSON object";
    return error_reply(400, "JSON decode error: " + why, "BadRequestError");
  }
  const auto& body = parsed.get_object();
  if (path == "/tokenize") return tokenize(body);
  if (path == "/detokenize") return detokenize(body);
  auto parsed_job = parse_job(*endpoint, body);
  if (auto* error = std::get_if<http::Response>(&parsed_job)) return std::move(*error);
  job = std::get<CompletionJob>(std::move(parsed_job));
  return {};
}

std::variant<CompletionJob, http::Response> VllmApi::Impl::parse_job(
    Endpoint endpoint, const json::object& body) const {
  auto parsed = endpoint == Endpoint::responses
                    ? parse_response_job(body)
                    : parse_completion(endpoint, body, engine.tokenizer(), options.model_name);
  if (auto* error = std::get_if<RequestError>(&parsed)) return bad_request(*error);
  auto& job = std::get<CompletionJob>(parsed);
  if (job.model != options.model_name)
    return error_reply(404, fmt::format("The model `{}` does not exist.", job.model),
                       "NotFoundError", "model");
  // serving_engine.py's _validate_input: the prompt must leave room, and the
  // prompt plus max_tokens must fit --max-model-len.
  const int max_len = engine.slot_context();
  const int n_prompt = static_cast<int>(job.prompt.size());
  if (n_prompt >= max_len)
    return error_reply(400,
                       fmt::format("This model's maximum context length is {} tokens. However, "
                                   "your request has {} input tokens. Please reduce the length "
                                   "of the input messages.",
                                   max_len, n_prompt),
                       "BadRequestError", "input_tokens");
  if (job.max_tokens && n_prompt + *job.max_tokens > max_len)
    return error_reply(400,
                       fmt::format("This model's maximum context length is {} tokens. However, "
                                   "you requested {} tokens ({} in the messages, {} in the "
                                   "completion). Please reduce the length of the messages or "
                                   "completion.",
                                   max_len, n_prompt + *job.max_tokens, n_prompt, *job.max_tokens),
                       "BadRequestError", "max_tokens");
  job.context_left = max_len - n_prompt;
  job.cache_prompt = true;
  job.id_slot = -1;
  return std::move(job);
}

// serving_responses.py's create_responses: a follow-up continues the stored
// conversation (its messages and output before the new input); `store`
// defaults to true but keeps nothing unless the server was started so.
std::variant<CompletionJob, RequestError> VllmApi::Impl::parse_response_job(
    const json::object& body) const {
  const ResponseStore::Entry* previous = nullptr;
  if (const auto* id = body.if_contains("previous_response_id"); id && id->is_string()) {
    previous = stored.find(id->get_string());
    if (!previous) return response_not_found(id->get_string());
  }
  auto parsed = responses::parse_responses(body, engine.tokenizer(), options.model_name,
                                           /*keeps_responses=*/true);
  if (auto* job = std::get_if<CompletionJob>(&parsed)) {
    if (previous)
      job->prompt.insert(job->prompt.begin(), previous->context.begin(), previous->context.end());
    const auto* store = body.if_contains("store");
    job->store_response =
        options.store_responses && !(store && store->is_bool() && !store->get_bool());
  }
  return parsed;
}

// retrieve_responses and cancel_responses: only a background response can be
// cancelled, and the simulator runs none.
std::optional<http::Response> VllmApi::Impl::stored_response(std::string_view path,
                                                             std::string_view method) const {
  constexpr std::string_view prefix = "/v1/responses/";
  if (!path.starts_with(prefix) || path.size() == prefix.size()) return std::nullopt;
  std::string_view id = path.substr(prefix.size());
  const bool cancel = id.ends_with("/cancel");
  if (cancel) id.remove_suffix(std::string_view("/cancel").size());
  if (id.find('/') != std::string_view::npos) return std::nullopt;
  if (method != (cancel ? "POST" : "GET"))
    return json_reply(405, json::object{{"detail", "Method Not Allowed"}});
  const ResponseStore::Entry* entry = stored.find(id);
  if (!entry) return bad_request(response_not_found(id));
  if (cancel)
    return bad_request(RequestError{400, "Cannot cancel a synchronous response.", "response_id",
                                    "invalid_request_error"});
  return json_reply(200, entry->response);
}

void VllmApi::Impl::keep(const json::object& response, std::vector<Token> context) {
  const auto* id = response.if_contains("id");
  if (id && id->is_string())
    stored.put(std::string(id->get_string()), ResponseStore::Entry{response, std::move(context)});
}

http::Response VllmApi::Impl::models() const {
  json::object permission{{"id", "modelperm-sim"},
                          {"object", "model_permission"},
                          {"created", created},
                          {"allow_create_engine", false},
                          {"allow_sampling", true},
                          {"allow_logprobs", true},
                          {"allow_search_indices", false},
                          {"allow_view", true},
                          {"allow_fine_tuning", false},
                          {"organization", "*"},
                          {"group", nullptr},
                          {"is_blocking", false}};
  json::object card{{"id", options.model_name},
                    {"object", "model"},
                    {"created", created},
                    {"owned_by", "vllm"},
                    {"root", options.model_path},
                    {"parent", nullptr},
                    {"max_model_len", engine.slot_context()},
                    {"permission", json::array{std::move(permission)}}};
  return json_reply(200, json::object{{"object", "list"}, {"data", json::array{std::move(card)}}});
}

http::Response VllmApi::Impl::tokenize(const json::object& body) const {
  std::string text;
  if (const auto* prompt = body.if_contains("prompt"); prompt && prompt->is_string()) {
    text = std::string(prompt->get_string());
  } else if (body.contains("messages")) {
    auto templated = apply_chat_template(body);
    if (auto* e = std::get_if<RequestError>(&templated)) return bad_request(*e);
    text = std::get<std::string>(std::move(templated));
  } else {
    return error_reply(400, "'prompt' (a string) or 'messages' is required", "BadRequestError",
                       "prompt");
  }
  json::array tokens;
  for (Token t : engine.tokenizer().tokenize(text)) tokens.push_back(t);
  const auto count = tokens.size();
  return json_reply(200, json::object{{"count", count},
                                      {"max_model_len", engine.slot_context()},
                                      {"tokens", std::move(tokens)},
                                      {"token_strs", nullptr}});
}

http::Response VllmApi::Impl::detokenize(const json::object& body) const {
  const auto* tokens = body.if_contains("tokens");
  if (!tokens || !tokens->is_array())
    return error_reply(400, "'tokens' must be an array of integers", "BadRequestError", "tokens");
  std::vector<Token> ids;
  for (const auto& t : tokens->get_array()) {
    if (!t.is_int64())
      return error_reply(400, "'tokens' must be an array of integers", "BadRequestError", "tokens");
    ids.push_back(static_cast<Token>(t.get_int64()));
  }
  return json_reply(200, json::object{{"prompt", engine.tokenizer().detokenize(ids)}});
}

http::Response VllmApi::Impl::metrics() const {
  const auto& c = engine.counters();
  const auto& sched = engine.scheduler();
  const auto& so = engine.options().scheduler;
  MetricsText m(fmt::format("engine=\"0\",model_name=\"{}\"", options.model_name));
  m.gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
          engine.requests_running());
  m.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
          engine.requests_waiting());
  m.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
          sched.kv_usage());
  m.counter("vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
            static_cast<double>(sched.counters().prefix_queries));
  m.counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
            static_cast<double>(sched.counters().prefix_hits));
  m.counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.",
            static_cast<double>(sched.counters().preemptions));
  m.counter("vllm:prompt_tokens", "Number of prefill tokens processed.",
            static_cast<double>(c.prompt_tokens_requested));
  m.counter("vllm:generation_tokens", "Number of generation tokens processed.",
            static_cast<double>(c.tokens_predicted_total));
  m.counter("vllm:request_success", "Count of successfully processed requests.",
            static_cast<double>(c.requests_finished_total));
  m.histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
              c.time_to_first_token);
  m.histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
              c.inter_token_latency);
  m.histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
              c.e2e_request_latency);
  m.histogram("vllm:request_queue_time_seconds",
              "Histogram of time spent in WAITING phase for request.", c.request_queue_time);
  if (so.timing.spec_draft_tokens > 0) {
    m.counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.",
              static_cast<double>(c.spec_drafts));
    m.counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.",
              static_cast<double>(c.spec_draft_tokens));
    m.counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.",
              static_cast<double>(c.spec_accepted_tokens));
    m.family("vllm:spec_decode_num_accepted_tokens_per_pos", "Accepted tokens per draft position.",
             "counter");
    for (std::size_t i = 0; i < c.spec_accepted_per_position.size(); ++i)
      m.sample("vllm:spec_decode_num_accepted_tokens_per_pos_total",
               static_cast<double>(c.spec_accepted_per_position[i]),
               fmt::format("position=\"{}\"", i));
  }
  m.family("vllm:cache_config_info", "Information of the LLMEngine CacheConfig", "gauge");
  m.sample("vllm:cache_config_info", 1.0,
           fmt::format("block_size=\"{}\",enable_prefix_caching=\"{}\",num_gpu_blocks=\"{}\"",
                       so.block_size, so.prefix_caching ? "True" : "False", sched.kv_blocks()));
  http::Response r;
  r.status = 200;
  r.headers.add("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
  mark_simulated(r.headers);
  r.body = m.take();
  return r;
}

}  // namespace switchyard::sim
