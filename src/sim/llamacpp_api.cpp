#include "sim/llamacpp_api.h"

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <climits>
#include <random>

#include <fmt/format.h>

#include "common/json_text.h"

namespace switchyard::sim {

namespace net = boost::asio;
namespace json = boost::json;
using net::awaitable;
using namespace net::experimental::awaitable_operators;
using clock_type = std::chrono::steady_clock;
constexpr auto use_tuple = net::as_tuple(net::use_awaitable);

namespace {

// llama-server's default sampling parameters, as its /props reports them.
constexpr std::string_view kDefaultParams =
    R"({"seed":4294967295,"temperature":0.800000011920929,"dynatemp_range":0.0,)"
    R"("dynatemp_exponent":1.0,"top_k":40,"top_p":0.949999988079071,"min_p":0.05000000074505806,)"
    R"("top_n_sigma":-1.0,"xtc_probability":0.0,"xtc_threshold":0.10000000149011612,"typical_p":1.0,)"
    R"("repeat_last_n":64,"repeat_penalty":1.0,"presence_penalty":0.0,"frequency_penalty":0.0,)"
    R"("dry_multiplier":0.0,"dry_base":1.75,"dry_allowed_length":2,"dry_penalty_last_n":64,)"
    R"("mirostat":0,"mirostat_tau":5.0,"mirostat_eta":0.10000000149011612,"adaptive_target":-1.0,)"
    R"("adaptive_decay":0.8999999761581421,"max_tokens":-1,"n_predict":-1,"n_keep":0,"n_discard":0,)"
    R"("ignore_eos":false,"stream":false,"n_probs":0,"min_keep":0,"chat_format":"Content-only",)"
    R"("reasoning_format":"none","reasoning_in_content":false,"generation_prompt":"",)"
    R"("samplers":["penalties","dry","top_n_sigma","top_k","typ_p","top_p","min_p","xtc",)"
    R"("temperature"],"speculative.types":"none","timings_per_token":false,)"
    R"("post_sampling_probs":false,"backend_sampling":false,"lora":[]})";

constexpr std::string_view kChatTemplate =
    "{%- for message in messages -%}\n  {{- '<|im_start|>' + message.role + '\n' + "
    "message.content + '<|im_end|>\n' -}}\n{%- endfor -%}\n{%- if add_generation_prompt -%}\n  "
    "{{- '<|im_start|>assistant\n' -}}\n{%- endif -%}";

constexpr std::string_view kFingerprint = "b0-unknown";

enum class Api { chat, text };

struct CompletionJob {
  Api api = Api::chat;
  std::vector<Token> prompt;
  int max_tokens = -1;  // -1: until the model stops
  bool ignore_eos = false;
  bool stream = false;
  bool include_usage = false;
  std::string model;
};

// A request the API refuses, in llama-server's error shape.
struct ApiError {
  int status;
  std::string message;
  std::string type;
};

http::Headers base_headers() {
  http::Headers h;
  h.add("Access-Control-Allow-Origin", "");
  return h;
}

http::Response json_reply(int status, const json::value& body) {
  http::Response r;
  r.status = status;
  r.headers = base_headers();
  r.headers.add("Content-Type", "application/json; charset=utf-8");
  if (status < 400)
    r.headers.add("Keep-Alive", "timeout=5, max=100");
  else
    r.headers.add("Connection", "close");  // llama-server closes after errors
  r.body = to_json_text(body);
  return r;
}

http::Response error_reply(const ApiError& e) {
  json::object inner;
  inner["code"] = e.status;
  inner["message"] = e.message;
  inner["type"] = e.type;
  json::object body;
  body["error"] = std::move(inner);
  return json_reply(e.status, body);
}

// Text of a message's content: a string, null, or an array of text parts.
std::optional<std::string> content_text(const json::value& content) {
  if (content.is_null()) return std::string();
  if (content.is_string()) return std::string(content.get_string());
  if (!content.is_array()) return std::nullopt;
  std::string out;
  for (const auto& part : content.get_array()) {
    const auto* obj = part.if_object();
    if (!obj) return std::nullopt;
    if (const auto* text = obj->if_contains("text"); text && text->is_string())
      out.append(text->get_string());
  }
  return out;
}

std::optional<int> int_field(const json::object& body, std::string_view key,
                             std::optional<ApiError>& error) {
  const auto* v = body.if_contains(key);
  if (!v || v->is_null()) return std::nullopt;
  if (v->is_int64() && v->get_int64() >= -1 && v->get_int64() <= INT_MAX)
    return static_cast<int>(v->get_int64());
  if (v->is_uint64() && v->get_uint64() <= INT_MAX) return static_cast<int>(v->get_uint64());
  error = ApiError{400, fmt::format("'{}' must be an integer", key), "invalid_request_error"};
  return std::nullopt;
}

bool bool_field(const json::object& body, std::string_view key) {
  const auto* v = body.if_contains(key);
  return v && v->is_bool() && v->get_bool();
}

}  // namespace

struct LlamacppApi::Impl {
  Impl(Engine& e, LlamacppApiOptions o)
      : engine(e),
        options(std::move(o)),
        faults(options.faults),
        id_rng(e.options().seed ^ 0x9e3779b97f4a7c15ull),
        started(std::chrono::system_clock::now()) {}

  awaitable<void> handle(http::Request request, http::Exchange& exchange);
  // The answer to a request that needs no generation, or (with `job` set)
  // the parsed completion to run.
  http::Response respond_now(const http::Request& request, std::optional<CompletionJob>& job);
  std::optional<http::Response> route_get(std::string_view path);
  http::Response models() const;
  http::Response props() const;
  http::Response metrics() const;
  http::Response tokenize(const json::object& body) const;
  http::Response detokenize(const json::object& body) const;
  std::variant<CompletionJob, ApiError> parse_job(Api api, const json::object& body) const;
  awaitable<void> complete(CompletionJob job, http::Exchange& exchange);
  // Carries out the fault due after a completion produced `produced` tokens;
  // false means the completion must stop (the connection was reset, or the
  // stall ended because the client left).
  awaitable<bool> token_fault(int produced, http::Exchange& exchange);
  std::string new_id();
  std::int64_t now_seconds() const {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  Engine& engine;
  const LlamacppApiOptions options;
  Faults faults;
  std::mt19937_64 id_rng;
  const std::chrono::system_clock::time_point started;
};

LlamacppApi::LlamacppApi(Engine& engine, LlamacppApiOptions options)
    : impl_(std::make_unique<Impl>(engine, std::move(options))) {}
LlamacppApi::~LlamacppApi() = default;

awaitable<void> LlamacppApi::handle(http::Request request, http::Exchange& exchange) {
  return impl_->handle(std::move(request), exchange);
}

http::Response LlamacppApi::protocol_error(int status, std::string message) {
  return error_reply(
      {status, std::move(message), status >= 500 ? "server_error" : "invalid_request_error"});
}

std::string LlamacppApi::Impl::new_id() {
  static constexpr char kAlphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id = "chatcmpl-";
  for (int i = 0; i < 32; ++i) id.push_back(kAlphabet[id_rng() % (sizeof(kAlphabet) - 1)]);
  return id;
}

awaitable<void> LlamacppApi::Impl::handle(http::Request request, http::Exchange& exchange) {
  // GCC 12 miscompiles some temporaries inside co_await expressions, so every
  // coroutine here awaits on named locals only.
  std::optional<CompletionJob> job;
  // While loading, llama-server answers every request with this 503.
  http::Response reply = faults.loading() ? error_reply({503, "Loading model", "unavailable_error"})
                                          : respond_now(request, job);
  if (job && faults.refuse_completion()) {
    job.reset();
    reply = error_reply(
        {503, "Service unavailable (simulated: --fail-before-first-byte)", "unavailable_error"});
  }
  if (!job) {
    co_await exchange.respond(std::move(reply));
    co_return;
  }
  // Stop generating the moment the client goes away, as llama-server does.
  co_await (complete(std::move(*job), exchange) || exchange.until_client_gone());
  if (faults.completion_ended())
    exit_for_fault(fmt::format("{} completion requests ended (--exit-after-requests)",
                               *faults.options().exit_after_requests));
}

http::Response LlamacppApi::Impl::respond_now(const http::Request& request,
                                              std::optional<CompletionJob>& job) {
  const std::string path(request.head.path());
  const std::string& method = request.head.method;
  if (method == "GET") {
    if (auto reply = route_get(path)) return std::move(*reply);
    return error_reply({404, "File Not Found", "not_found_error"});
  }
  if (method != "POST") return error_reply({404, "File Not Found", "not_found_error"});
  if (path == "/v1/embeddings" || path == "/embeddings" || path == "/embedding")
    return error_reply({501,
                        "This server does not support embeddings. Start it with `--embeddings`",
                        "not_supported_error"});
  std::optional<Api> api;
  if (path == "/v1/chat/completions" || path == "/chat/completions") api = Api::chat;
  if (path == "/v1/completions" || path == "/completions") api = Api::text;
  const bool tokenizer_path = path == "/tokenize" || path == "/detokenize";
  if (!api && !tokenizer_path) return error_reply({404, "File Not Found", "not_found_error"});

  boost::system::error_code ec;
  json::value parsed = json::parse(request.body, ec);
  if (ec || !parsed.is_object()) {
    // llama-server reports malformed JSON as a 500 from its JSON library.
    std::string why = ec ? ec.message() : "the request body is not a JSON object";
    return error_reply(
        {500, "[json.exception.parse_error.101] parse error: " + why, "server_error"});
  }
  const auto& body = parsed.get_object();
  if (path == "/tokenize") return tokenize(body);
  if (path == "/detokenize") return detokenize(body);
  auto parsed_job = parse_job(*api, body);
  if (auto* error = std::get_if<ApiError>(&parsed_job)) return error_reply(*error);
  job = std::get<CompletionJob>(std::move(parsed_job));
  return {};
}

std::optional<http::Response> LlamacppApi::Impl::route_get(std::string_view path) {
  if (path == "/health" || path == "/v1/health") {
    json::object body;
    body["status"] = "ok";
    return json_reply(200, body);
  }
  if (path == "/v1/models" || path == "/models") return models();
  if (path == "/props") return props();
  if (path == "/metrics") return metrics();
  return std::nullopt;
}

http::Response LlamacppApi::Impl::models() const {
  const auto& alias = options.model_alias;
  json::object details{{"parent_model", ""},   {"format", "gguf"},
                       {"family", ""},         {"families", json::array{""}},
                       {"parameter_size", ""}, {"quantization_level", ""}};
  json::object ollama_style{{"name", alias},
                            {"model", alias},
                            {"modified_at", ""},
                            {"size", ""},
                            {"digest", ""},
                            {"type", "model"},
                            {"description", ""},
                            {"tags", json::array{""}},
                            {"capabilities", json::array{"completion"}},
                            {"parameters", ""},
                            {"details", std::move(details)}};
  json::object meta{{"vocab_type", 1},
                    {"n_vocab", engine.tokenizer().vocab_size()},
                    {"n_ctx", engine.slot_context()},
                    {"n_ctx_train", engine.options().ctx_size},
                    {"n_embd", 5120},
                    {"n_params", 27000000000LL},
                    {"size", 16500000000LL},
                    {"ftype", "Q4_K - Medium (simulated)"}};
  json::object entry{
      {"id", alias},
      {"aliases", json::array{json::string(alias)}},
      {"tags", json::array{}},
      {"object", "model"},
      {"created",
       std::chrono::duration_cast<std::chrono::seconds>(started.time_since_epoch()).count()},
      {"owned_by", "llamacpp"},
      {"meta", std::move(meta)}};
  json::object body{{"models", json::array{std::move(ollama_style)}},
                    {"object", "list"},
                    {"data", json::array{std::move(entry)}}};
  return json_reply(200, body);
}

http::Response LlamacppApi::Impl::props() const {
  json::object settings{{"params", json::parse(kDefaultParams)}, {"n_ctx", engine.slot_context()}};
  json::object body{
      {"default_generation_settings", std::move(settings)},
      {"total_slots", engine.options().slots},
      {"model_alias", options.model_alias},
      {"model_ftype", "Q4_K - Medium (simulated)"},
      {"model_path", options.model_path},
      {"modalities", json::object{{"vision", false}, {"video", false}, {"audio", false}}},
      {"media_marker", "<__media_switchyard_sim__>"},
      {"endpoint_slots", true},
      {"endpoint_props", false},
      {"endpoint_metrics", true},
      {"ui", false},
      {"ui_settings", json::object{}},
      {"chat_template", kChatTemplate},
      {"chat_template_caps", json::object{{"supports_object_arguments", false},
                                          {"supports_parallel_tool_calls", false},
                                          {"supports_preserve_reasoning", false},
                                          {"supports_string_content", true},
                                          {"supports_system_role", true},
                                          {"supports_tool_calls", false},
                                          {"supports_tools", false},
                                          {"supports_typed_content", false}}},
      {"bos_token", "<s>"},
      {"eos_token", "</s>"},
      {"build_info", kFingerprint},
      {"is_sleeping", false},
      {"cors_proxy_enabled", false}};
  return json_reply(200, body);
}

http::Response LlamacppApi::Impl::metrics() const {
  const auto& c = engine.counters();
  std::string out;
  const auto metric = [&](std::string_view name, std::string_view help, std::string_view type,
                          auto value) {
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} {2}\n{0} {3}\n", name, help, type, value);
  };
  metric("llamacpp:prompt_tokens_total", "Number of prompt tokens processed.", "counter",
         c.prompt_tokens_total);
  metric("llamacpp:prompt_seconds_total", "Prompt process time", "counter", c.prompt_seconds_total);
  metric("llamacpp:tokens_predicted_total", "Number of generation tokens processed.", "counter",
         c.tokens_predicted_total);
  metric("llamacpp:tokens_predicted_seconds_total", "Predict process time", "counter",
         c.tokens_predicted_seconds_total);
  metric("llamacpp:n_decode_total", "Total number of llama_decode() calls", "counter",
         c.n_decode_total);
  metric("llamacpp:n_tokens_max", "Largest observed n_tokens.", "counter", c.n_tokens_max);
  metric("llamacpp:spec_decode_num_draft_tokens_total", "Total draft tokens generated", "counter",
         0);
  metric("llamacpp:spec_decode_num_accepted_tokens_total",
         "Total draft tokens accepted by the target model", "counter", 0);
  metric("llamacpp:spec_decode_num_drafts_total", "Total speculative decoding verification steps",
         "counter", 0);
  metric("llamacpp:prompt_tokens_seconds", "Average prompt throughput in tokens/s.", "gauge",
         c.last_prompt_per_second);
  metric("llamacpp:predicted_tokens_seconds", "Average generation throughput in tokens/s.", "gauge",
         c.last_predicted_per_second);
  metric("llamacpp:requests_processing", "Number of requests processing.", "gauge",
         c.requests_processing);
  metric("llamacpp:requests_deferred", "Number of requests deferred.", "gauge",
         c.requests_deferred);
  metric("llamacpp:n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call",
         "gauge", c.requests_processing > 0 ? c.requests_processing : 1);
  // Not in llama-server: high-water marks that let tests check a gateway.
  metric("switchyard_sim:requests_processing_max",
         "Most requests processing at once since start (simulator only).", "gauge",
         c.max_requests_processing);
  metric("switchyard_sim:requests_deferred_total",
         "Requests that had to wait for a free slot (simulator only).", "counter",
         c.requests_deferred_total);
  http::Response r = json_reply(200, json::object{});
  r.headers.set("Content-Type", "text/plain; version=0.0.4");
  r.body = std::move(out);
  return r;
}

http::Response LlamacppApi::Impl::tokenize(const json::object& body) const {
  const auto* content = body.if_contains("content");
  if (!content || !content->is_string())
    return error_reply({400, "'content' must be a string", "invalid_request_error"});
  const bool with_pieces = bool_field(body, "with_pieces");
  const auto& tok = engine.tokenizer();
  json::array tokens;
  for (Token t : tok.tokenize(content->get_string())) {
    if (with_pieces)
      tokens.push_back(json::object{{"id", t}, {"piece", tok.piece(t)}});
    else
      tokens.push_back(t);
  }
  return json_reply(200, json::object{{"tokens", std::move(tokens)}});
}

http::Response LlamacppApi::Impl::detokenize(const json::object& body) const {
  const auto* tokens = body.if_contains("tokens");
  std::vector<Token> ids;
  if (tokens && tokens->is_array()) {
    for (const auto& t : tokens->get_array()) {
      if (!t.is_int64())
        return error_reply({400, "'tokens' must be an array of integers", "invalid_request_error"});
      ids.push_back(static_cast<Token>(t.get_int64()));
    }
  }
  return json_reply(200, json::object{{"content", engine.tokenizer().detokenize(ids)}});
}

std::variant<CompletionJob, ApiError> LlamacppApi::Impl::parse_job(Api api,
                                                                   const json::object& body) const {
  CompletionJob job;
  job.api = api;
  std::optional<ApiError> error;
  const auto& tok = engine.tokenizer();
  if (api == Api::chat) {
    const auto* messages = body.if_contains("messages");
    if (!messages) return ApiError{400, "'messages' is required", "invalid_request_error"};
    if (!messages->is_array() || messages->get_array().empty())
      return ApiError{400, "Expected 'messages' to be a non-empty array", "invalid_request_error"};
    // The ChatML template llama-server applies when the model has none.
    std::string prompt;
    for (const auto& m : messages->get_array()) {
      const auto* obj = m.if_object();
      const auto* role = obj ? obj->if_contains("role") : nullptr;
      if (!role || !role->is_string())
        return ApiError{400, "each message needs a string 'role'", "invalid_request_error"};
      const auto* content = obj->if_contains("content");
      auto text = content ? content_text(*content) : std::optional<std::string>("");
      if (!text)
        return ApiError{400, "message 'content' must be a string or an array of parts",
                        "invalid_request_error"};
      prompt += fmt::format("<|im_start|>{}\n{}<|im_end|>\n", std::string_view(role->get_string()),
                            *text);
    }
    prompt += "<|im_start|>assistant\n";
    job.prompt = tok.tokenize(prompt);
    job.max_tokens = int_field(body, "max_completion_tokens", error)
                         .value_or(int_field(body, "max_tokens", error).value_or(-1));
  } else {
    const auto* prompt = body.if_contains("prompt");
    if (!prompt) return ApiError{400, "'prompt' is required", "invalid_request_error"};
    if (prompt->is_string()) {
      job.prompt = tok.tokenize(prompt->get_string());
    } else if (prompt->is_array()) {
      for (const auto& t : prompt->get_array()) {
        if (!t.is_int64() || t.get_int64() < 0 ||
            t.get_int64() >= static_cast<std::int64_t>(tok.vocab_size()))
          return ApiError{400, "'prompt' must be a string or an array of valid token ids",
                          "invalid_request_error"};
        job.prompt.push_back(static_cast<Token>(t.get_int64()));
      }
    } else {
      return ApiError{400, "'prompt' must be a string or an array of token ids",
                      "invalid_request_error"};
    }
    job.max_tokens = int_field(body, "max_tokens", error).value_or(16);
  }
  if (error) return *error;
  job.ignore_eos = bool_field(body, "ignore_eos");
  job.stream = bool_field(body, "stream");
  if (const auto* so = body.if_contains("stream_options"); so && so->is_object())
    job.include_usage = bool_field(so->get_object(), "include_usage");
  if (const auto* model = body.if_contains("model"); model && model->is_string())
    job.model = std::string(model->get_string());
  else
    job.model = options.model_alias;
  if (job.prompt.empty()) return ApiError{400, "the prompt is empty", "invalid_request_error"};
  if (static_cast<int>(job.prompt.size()) >= engine.slot_context())
    return ApiError{400,
                    fmt::format("the request exceeds the available context size ({} tokens, "
                                "context {}), try increasing it",
                                job.prompt.size(), engine.slot_context()),
                    "exceed_context_size_error"};
  return job;
}

namespace {

json::object timings_json(int cache_n, int prompt_n, double prompt_ms, int predicted_n,
                          double predicted_ms) {
  const auto per_token = [](double ms, int n) { return n > 0 ? ms / n : 0.0; };
  const auto per_second = [](double ms, int n) { return ms > 0 ? 1e3 * n / ms : 0.0; };
  return json::object{{"cache_n", cache_n},
                      {"prompt_n", prompt_n},
                      {"prompt_ms", prompt_ms},
                      {"prompt_per_token_ms", per_token(prompt_ms, prompt_n)},
                      {"prompt_per_second", per_second(prompt_ms, prompt_n)},
                      {"predicted_n", predicted_n},
                      {"predicted_ms", predicted_ms},
                      {"predicted_per_token_ms", per_token(predicted_ms, predicted_n)},
                      {"predicted_per_second", per_second(predicted_ms, predicted_n)}};
}

json::object usage_json(int prompt_tokens, int completion_tokens, int cached) {
  return json::object{{"completion_tokens", completion_tokens},
                      {"prompt_tokens", prompt_tokens},
                      {"total_tokens", prompt_tokens + completion_tokens},
                      {"prompt_tokens_details", json::object{{"cached_tokens", cached}}}};
}

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

awaitable<void> LlamacppApi::Impl::complete(CompletionJob job, http::Exchange& exchange) {
  // Never throws: the `||` with until_client_gone() in handle() only ends on
  // a normal return, and a throw here would leave it waiting on the client.
  try {
    SlotLease lease = co_await engine.acquire();
    const auto task = engine.next_task_id();
    const auto prefill_start = clock_type::now();
    const int cached = co_await engine.prefill(lease, job.prompt, task);
    const auto decode_start = clock_type::now();

    const int n_prompt = static_cast<int>(job.prompt.size());
    const int ctx_left = engine.slot_context() - n_prompt;
    const int natural = engine.natural_length();
    const int limit = job.max_tokens >= 0 ? job.max_tokens : INT_MAX;
    int n_out = job.ignore_eos ? limit : std::min(natural, limit);
    n_out = std::min(n_out, ctx_left);
    const bool stopped = !job.ignore_eos && natural <= limit && natural <= ctx_left;
    const std::string finish = stopped ? "stop" : "length";

    const std::string id = new_id();
    const std::int64_t created = now_seconds();
    const bool chat = job.api == Api::chat;
    // Key order differs between llama-server's chat chunks and its other
    // bodies; these builders follow the captures exactly.
    const auto chunk = [&](json::value choice) {
      json::object o;
      o["choices"] = json::array{std::move(choice)};
      o["created"] = created;
      if (chat) {
        o["id"] = id;
        o["model"] = job.model;
        o["system_fingerprint"] = kFingerprint;
        o["object"] = "chat.completion.chunk";
      } else {
        o["model"] = job.model;
        o["system_fingerprint"] = kFingerprint;
        o["object"] = "text_completion";
        o["id"] = id;
      }
      return o;
    };
    const auto send_event = [&](const json::value& v) -> awaitable<bool> {
      const std::string event = "data: " + to_json_text(v) + "\n\n";
      co_return co_await exchange.send_chunk(event);
    };

    if (job.stream) {
      http::Headers h = base_headers();
      h.add("X-Accel-Buffering", "no");
      h.add("Content-Type", "text/event-stream");
      h.add("Keep-Alive", "timeout=5, max=100");
      if (!co_await exchange.start_stream(200, std::move(h))) co_return;
      if (chat) {
        // Built outside the co_await: GCC 12 mishandles braced string
        // literals inside a co_await expression.
        json::object role_delta{{"role", "assistant"}, {"content", nullptr}};
        json::object first{
            {"finish_reason", nullptr}, {"index", 0}, {"delta", std::move(role_delta)}};
        const json::value event = chunk(std::move(first));
        if (!co_await send_event(event)) co_return;
      }
    }

    std::string text;
    if (!co_await token_fault(0, exchange)) co_return;
    for (int i = 0; i < n_out; ++i) {
      const Token t = co_await engine.decode(lease, n_out - i);
      const std::string_view piece = engine.tokenizer().piece(t);
      text.append(piece);
      if (job.stream) {
        json::value choice =
            chat ? json::value(json::object{{"finish_reason", nullptr},
                                            {"index", 0},
                                            {"delta", json::object{{"content", piece}}}})
                 : json::value(json::object{{"text", piece},
                                            {"index", 0},
                                            {"logprobs", nullptr},
                                            {"finish_reason", nullptr}});
        const json::value event = chunk(std::move(choice));
        if (!co_await send_event(event)) co_return;
      }
      if (!co_await token_fault(i + 1, exchange)) co_return;
    }
    const auto end = clock_type::now();
    auto timings = timings_json(cached, n_prompt - cached, ms_between(prefill_start, decode_start),
                                n_out, ms_between(decode_start, end));
    auto usage = usage_json(n_prompt, n_out, cached);
    lease = SlotLease();  // the slot is free before the last bytes go out, as in llama-server

    if (!job.stream) {
      json::object body;
      if (chat) {
        body["choices"] = json::array{
            json::object{{"finish_reason", finish},
                         {"index", 0},
                         {"message", json::object{{"role", "assistant"}, {"content", text}}}}};
        body["created"] = created;
        body["model"] = job.model;
        body["system_fingerprint"] = kFingerprint;
        body["object"] = "chat.completion";
      } else {
        body["choices"] = json::array{json::object{
            {"text", text}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish}}};
        body["created"] = created;
        body["model"] = job.model;
        body["system_fingerprint"] = kFingerprint;
        body["object"] = "text_completion";
      }
      body["usage"] = std::move(usage);
      body["id"] = id;
      body["timings"] = std::move(timings);
      http::Response reply = json_reply(200, body);
      co_await exchange.respond(std::move(reply));
      co_return;
    }

    if (chat) {
      auto last =
          chunk(json::object{{"finish_reason", finish}, {"index", 0}, {"delta", json::object{}}});
      if (!job.include_usage) last["timings"] = timings;
      if (!co_await send_event(last)) co_return;
      if (job.include_usage) {
        json::object u;
        u["choices"] = json::array{};
        u["created"] = created;
        u["id"] = id;
        u["model"] = job.model;
        u["system_fingerprint"] = kFingerprint;
        u["object"] = "chat.completion.chunk";
        u["usage"] = std::move(usage);
        u["timings"] = std::move(timings);
        if (!co_await send_event(u)) co_return;
      }
    } else {
      auto last = chunk(json::object{
          {"text", ""}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish}});
      last.erase("id");
      last["usage"] = std::move(usage);
      last["id"] = id;
      last["timings"] = std::move(timings);
      if (!co_await send_event(last)) co_return;
    }
    const std::string_view done = "data: [DONE]\n\n";
    if (!co_await exchange.send_chunk(done)) co_return;
    co_await exchange.end_stream();
  } catch (const std::exception&) {
    // Cancelled (client gone) or the connection failed: the lease is released
    // by unwinding; nothing is left to answer.
  }
}

awaitable<bool> LlamacppApi::Impl::token_fault(int produced, http::Exchange& exchange) {
  switch (faults.after_tokens(produced, engine.counters().tokens_predicted_total)) {
    case TokenFault::none:
      co_return true;
    case TokenFault::exit:
      exit_for_fault(fmt::format("the engine produced {} tokens (--exit-after-tokens)",
                                 engine.counters().tokens_predicted_total));
    case TokenFault::reset:
      exchange.abort_connection();
      co_return false;
    case TokenFault::stall: {
      // Hold the slot and the connection; handle()'s race with
      // until_client_gone() cancels this wait when the client leaves.
      const auto executor = co_await net::this_coro::executor;
      net::steady_timer forever(executor, net::steady_timer::time_point::max());
      co_await forever.async_wait(use_tuple);
      co_return false;
    }
  }
  co_return false;
}

}  // namespace switchyard::sim
