#include "sim/llamacpp_api.h"

#include <boost/asio.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <random>

#include <fmt/format.h>

#include "sim/anthropic_format.h"
#include "sim/completion.h"
#include "sim/llamacpp_format.h"
#include "sim/responses_format.h"
#include "sim/transcription.h"

namespace switchyard::sim {

namespace net = boost::asio;
namespace json = boost::json;
using llamacpp::error_reply;
using llamacpp::json_reply;
using net::awaitable;

namespace {

constexpr std::string_view kChatTemplate =
    "{%- for message in messages -%}\n  {{- '<|im_start|>' + message.role + '\n' + "
    "message.content + '<|im_end|>\n' -}}\n{%- endfor -%}\n{%- if add_generation_prompt -%}\n  "
    "{{- '<|im_start|>assistant\n' -}}\n{%- endif -%}";

http::Response request_error(const RequestError& e) {
  return error_reply(e.status, e.message,
                     e.status >= 500 ? "server_error" : "invalid_request_error");
}

// The token-counting routes and the request shape each counts.
std::optional<Endpoint> counted_endpoint(std::string_view path) {
  if (path == "/v1/messages/count_tokens") return Endpoint::messages;
  if (path == "/v1/chat/completions/input_tokens" || path == "/chat/completions/input_tokens")
    return Endpoint::chat;
  if (path == "/v1/responses/input_tokens" || path == "/responses/input_tokens")
    return Endpoint::responses;
  return std::nullopt;
}

// As llama-server's routes: all but these wait for an engine asleep
// (--sleep-idle-seconds) to wake, and start its idle time over; a
// GET /metrics or /slots included.
bool needs_the_model(const http::RequestHead& head) {
  const auto path = head.path();
  return !(head.method == "GET" && (path == "/health" || path == "/v1/health" || path == "/props" ||
                                    path == "/models" || path == "/v1/models"));
}

}  // namespace

struct LlamacppApi::Impl {
  Impl(Engine& e, LlamacppApiOptions o)
      : engine(e),
        options(std::move(o)),
        faults(options.faults),
        runner(engine, faults),
        model_name(options.model_alias.value_or(options.model_path)),
        id_rng(e.options().seed ^ 0x9e3779b97f4a7c15ull),
        started(std::chrono::system_clock::now()) {}

  awaitable<void> handle(http::Request& request, http::Exchange& exchange);
  // The answer to a request that needs no generation, or (with `job` set)
  // the parsed completion to run.
  http::Response respond_now(const http::Request& request, std::optional<CompletionJob>& job);
  std::optional<http::Response> route_get(std::string_view path, std::string_view target);
  json::object model_info() const;
  http::Response models() const;
  http::Response props() const;
  http::Response metrics() const;
  http::Response slots(std::string_view target) const;
  http::Response tokenize(const json::object& body) const;
  http::Response detokenize(const json::object& body) const;
  http::Response apply_template(const json::object& body) const;
  http::Response count_tokens(Endpoint endpoint, const json::object& body) const;
  std::variant<CompletionJob, RequestError> parse_prompt(Endpoint endpoint,
                                                         const json::object& body) const;
  std::variant<CompletionJob, http::Response> parse_job(Endpoint endpoint,
                                                        const json::object& body) const;
  std::string new_id();

  Engine& engine;
  const LlamacppApiOptions options;
  Faults faults;
  CompletionRunner runner;
  const std::string model_name;  // in every response, /v1/models and /props
  std::mt19937_64 id_rng;
  const std::chrono::system_clock::time_point started;
};

LlamacppApi::LlamacppApi(Engine& engine, LlamacppApiOptions options)
    : impl_(std::make_unique<Impl>(engine, std::move(options))) {}
LlamacppApi::~LlamacppApi() = default;

awaitable<void> LlamacppApi::handle(http::Request& request, http::Exchange& exchange) {
  return impl_->handle(request, exchange);
}

json::object LlamacppApi::model_info() const {
  return impl_->model_info();
}

http::Response LlamacppApi::protocol_error(int status, std::string message, std::string_view) {
  return error_reply(status, message, status >= 500 ? "server_error" : "invalid_request_error");
}

std::string LlamacppApi::Impl::new_id() {
  static constexpr char kAlphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id = "chatcmpl-";
  for (int i = 0; i < 32; ++i) id.push_back(kAlphabet[id_rng() % (sizeof(kAlphabet) - 1)]);
  return id;
}

awaitable<void> LlamacppApi::Impl::handle(http::Request& request, http::Exchange& exchange) {
  // Loading: llama-server answers every request with its 503 "Loading model".
  std::optional<IdleSleep::Use> awake;
  if (options.idle_sleep && !runner.loading() && needs_the_model(request.head))
    awake.emplace(co_await options.idle_sleep->use());
  std::optional<CompletionJob> job;
  http::Response reply = runner.loading() ? http::Response() : respond_now(request, job);
  const CompletionRunner::Unavailable unavailable = [](std::string_view message) {
    return error_reply(503, message, "unavailable_error");
  };
  const CompletionRunner::MakeFormat make_format = [this](const CompletionJob& j,
                                                          std::int64_t created) {
    return llamacpp::make_format(j, new_id(), created);
  };
  co_await runner.answer(std::move(job), std::move(reply), unavailable, make_format, exchange);
}

http::Response LlamacppApi::Impl::respond_now(const http::Request& request,
                                              std::optional<CompletionJob>& job) {
  const std::string path(request.head.path());
  const std::string& method = request.head.method;
  if (method == "GET") {
    if (auto reply = route_get(path, request.head.target)) return std::move(*reply);
    return error_reply(404, "File Not Found", "not_found_error");
  }
  if (method != "POST") return error_reply(404, "File Not Found", "not_found_error");
  if (is_transcription_path(path)) {
    auto heard = transcribe(request, engine.tokenizer());
    if (auto* e = std::get_if<RequestError>(&heard)) return request_error(*e);
    return transcription_reply(std::get<Transcription>(heard), &json_reply);
  }
  if (path == "/v1/embeddings" || path == "/embeddings" || path == "/embedding")
    return error_reply(501, "This server does not support embeddings. Start it with `--embeddings`",
                       "not_supported_error");
  const bool rerank =
      path == "/rerank" || path == "/reranking" || path == "/v1/rerank" || path == "/v1/reranking";
  if (rerank && !options.reranking)
    return error_reply(501, "This server does not support reranking. Start it with `--reranking`",
                       "not_supported_error");
  std::optional<Endpoint> endpoint;
  if (path == "/v1/chat/completions" || path == "/chat/completions") endpoint = Endpoint::chat;
  if (path == "/v1/completions" || path == "/completions") endpoint = Endpoint::text;
  if (path == "/completion" || path == "/completions/infill" || path == "/infill")
    endpoint = Endpoint::native;
  if (path == "/v1/messages") endpoint = Endpoint::messages;
  if (path == "/v1/responses" || path == "/responses") endpoint = Endpoint::responses;
  const bool other = path == "/tokenize" || path == "/detokenize" || path == "/apply-template" ||
                     counted_endpoint(path) || rerank;
  if (!endpoint && !other) return error_reply(404, "File Not Found", "not_found_error");

  boost::system::error_code ec;
  json::value parsed = json::parse(request.body, ec);
  if (ec || !parsed.is_object()) {
    // llama-server reports malformed JSON as a 500 from its JSON library.
    std::string why = ec ? ec.message() : "the request body is not a JSON object";
    return error_reply(500, "[json.exception.parse_error.101] parse error: " + why, "server_error");
  }
  auto& body = parsed.get_object();
  if (path == "/tokenize") return tokenize(body);
  if (path == "/detokenize") return detokenize(body);
  if (path == "/apply-template") return apply_template(body);
  if (const auto counted = counted_endpoint(path)) return count_tokens(*counted, body);
  if (rerank) return llamacpp::rerank(body, engine.tokenizer(), model_name);
  if (path.ends_with("infill")) {
    auto prompt = llamacpp::infill_prompt(body);
    if (auto* e = std::get_if<RequestError>(&prompt)) return request_error(*e);
    body["prompt"] = std::get<std::string>(std::move(prompt));
  }
  auto parsed_job = parse_job(*endpoint, body);
  if (auto* error = std::get_if<http::Response>(&parsed_job)) return std::move(*error);
  job = std::get<CompletionJob>(std::move(parsed_job));
  return {};
}

std::variant<CompletionJob, RequestError> LlamacppApi::Impl::parse_prompt(
    Endpoint endpoint, const json::object& body) const {
  if (endpoint == Endpoint::messages)
    return anthropic::parse_messages(body, engine.tokenizer(), model_name);
  if (endpoint == Endpoint::responses)
    return responses::parse_responses(body, engine.tokenizer(), model_name);
  return parse_completion(endpoint, body, engine.tokenizer(), model_name);
}

std::variant<CompletionJob, http::Response> LlamacppApi::Impl::parse_job(
    Endpoint endpoint, const json::object& body) const {
  auto parsed = parse_prompt(endpoint, body);
  if (auto* error = std::get_if<RequestError>(&parsed)) return request_error(*error);
  auto& job = std::get<CompletionJob>(parsed);
  // llama-server answers with its own name, not the one asked for.
  job.model = model_name;
  // llama-server refuses a prompt that does not fit its slot's context (with
  // both sizes in the error), and stops generation where the context ends.
  const int n_prompt = static_cast<int>(job.prompt.size());
  if (n_prompt >= engine.slot_context()) {
    json::object inner{
        {"code", 400},
        {"message", "the request exceeds the available context size, try increasing it"},
        {"type", "exceed_context_size_error"},
        {"n_prompt_tokens", n_prompt},
        {"n_ctx", engine.slot_context()}};
    return json_reply(400, json::object{{"error", std::move(inner)}});
  }
  job.context_left = engine.slot_context() - n_prompt;
  return std::move(job);
}

std::optional<http::Response> LlamacppApi::Impl::route_get(std::string_view path,
                                                           std::string_view target) {
  if (path == "/health" || path == "/v1/health") {
    json::object body;
    body["status"] = "ok";
    return json_reply(200, body);
  }
  if (path == "/v1/models" || path == "/models") return models();
  if (path == "/props") return props();
  if (path == "/metrics") return metrics();
  if (path == "/slots") return slots(target);
  return std::nullopt;
}

json::object LlamacppApi::Impl::model_info() const {
  json::object meta{{"vocab_type", 1},
                    {"n_vocab", engine.tokenizer().vocab_size()},
                    {"n_ctx", engine.slot_context()},
                    {"n_ctx_train", engine.slot_context() * engine.max_seqs()},
                    {"n_embd", 5120},
                    {"n_params", 27000000000LL},
                    {"size", 16500000000LL},
                    {"ftype", "Q4_K - Medium (simulated)"}};
  return json::object{
      {"id", model_name},
      {"aliases", json::array{json::string(model_name)}},
      {"tags", json::array{}},
      {"object", "model"},
      {"created",
       std::chrono::duration_cast<std::chrono::seconds>(started.time_since_epoch()).count()},
      {"owned_by", "llamacpp"},
      {"meta", std::move(meta)}};
}

http::Response LlamacppApi::Impl::models() const {
  const auto& alias = model_name;
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
  json::object body{{"models", json::array{std::move(ollama_style)}},
                    {"object", "list"},
                    {"data", json::array{model_info()}}};
  return json_reply(200, body);
}

http::Response LlamacppApi::Impl::props() const {
  json::object settings{{"params", llamacpp::default_params()}, {"n_ctx", engine.slot_context()}};
  json::object body{
      {"default_generation_settings", std::move(settings)},
      {"total_slots", engine.max_seqs()},
      {"model_alias", model_name},
      {"model_ftype", "Q4_K - Medium (simulated)"},
      {"model_path", options.model_path},
      {"modalities", json::object{{"vision", false}, {"video", false}, {"audio", false}}},
      {"media_marker", "<__media_switchyard_sim__>"},
      {"endpoint_slots", true},
      {"endpoint_props", false},
      {"endpoint_metrics", true},
      {"ui", options.ui},
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
      {"build_info", llamacpp::kFingerprint},
      {"is_sleeping", options.idle_sleep && options.idle_sleep->asleep()},
      {"cors_proxy_enabled", false}};
  return json_reply(200, body);
}

http::Response LlamacppApi::Impl::slots(std::string_view target) const {
  const auto views = engine.scheduler().slots();
  const bool speculative = engine.options().scheduler.timing.spec_draft_tokens > 0;
  if (target.find("fail_on_no_slot=1") != std::string_view::npos &&
      std::none_of(views.begin(), views.end(), [](const SlotView& v) { return !v.busy; }))
    return error_reply(503, "no slot available", "unavailable_error");
  json::array out;
  for (const auto& v : views) {
    json::object slot{{"id", v.id},
                      {"n_ctx", engine.slot_context()},
                      {"speculative", speculative},
                      {"is_processing", v.busy}};
    if (v.used) {
      slot["id_task"] = v.seq;
      slot["n_prompt_tokens"] = v.n_prompt;
      slot["n_prompt_tokens_processed"] = v.n_prompt - v.n_cached;
      slot["n_prompt_tokens_cache"] = v.n_cached;
      slot["params"] = llamacpp::slot_params(v.info);
      const int remain = v.info.n_predict >= 0 ? v.info.n_predict - v.n_decoded : -1;
      slot["next_token"] = json::array{json::object{{"has_next_token", v.busy},
                                                    {"has_new_line", false},
                                                    {"n_remain", remain},
                                                    {"n_decoded", v.n_decoded}}};
    }
    out.push_back(std::move(slot));
  }
  return json_reply(200, out);
}

http::Response LlamacppApi::Impl::metrics() const {
  const auto& c = engine.counters();
  std::string out;
  const auto metric = [&](std::string_view name, std::string_view help, std::string_view type,
                          auto value) {
    out += fmt::format("# HELP {0} {1}\n# TYPE {0} {2}\n{0} {3}\n", name, help, type, value);
  };
  const auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
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
         c.spec_draft_tokens);
  metric("llamacpp:spec_decode_num_accepted_tokens_total",
         "Total draft tokens accepted by the target model", "counter", c.spec_accepted_tokens);
  metric("llamacpp:spec_decode_num_drafts_total", "Total speculative decoding verification steps",
         "counter", c.spec_drafts);
  metric("llamacpp:prompt_tokens_seconds", "Average prompt throughput in tokens/s.", "gauge",
         ratio(c.prompt_tokens_total, c.prompt_seconds_total));
  // Per request, summed: like llama-server, this is one stream's speed, not
  // the engine's aggregate; --over-report inflates it.
  metric("llamacpp:predicted_tokens_seconds", "Average generation throughput in tokens/s.", "gauge",
         ratio(c.tokens_predicted_total, c.tokens_predicted_seconds_total) *
             engine.options().over_report);
  metric("llamacpp:requests_processing", "Number of requests processing.", "gauge",
         engine.requests_running());
  metric("llamacpp:requests_deferred", "Number of requests deferred.", "gauge",
         engine.requests_waiting());
  metric("llamacpp:n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call",
         "gauge", ratio(c.busy_slots_total, c.n_decode_total));
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
    return error_reply(400, "'content' must be a string", "invalid_request_error");
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
        return error_reply(400, "'tokens' must be an array of integers", "invalid_request_error");
      ids.push_back(static_cast<Token>(t.get_int64()));
    }
  }
  return json_reply(200, json::object{{"content", engine.tokenizer().detokenize(ids)}});
}

// handle_count_tokens: the prompt a request of `endpoint` would make, counted;
// the OpenAI shapes name their object.
http::Response LlamacppApi::Impl::count_tokens(Endpoint endpoint, const json::object& body) const {
  auto parsed = parse_prompt(endpoint, body);
  if (auto* e = std::get_if<RequestError>(&parsed)) return request_error(*e);
  const int n = static_cast<int>(std::get<CompletionJob>(parsed).prompt.size());
  json::object out{{"input_tokens", n}};
  if (endpoint != Endpoint::messages) out["object"] = "response.input_tokens";
  return json_reply(200, out);
}

http::Response LlamacppApi::Impl::apply_template(const json::object& body) const {
  auto prompt = apply_chat_template(body);
  if (auto* e = std::get_if<RequestError>(&prompt)) return request_error(*e);
  return json_reply(200, json::object{{"prompt", std::get<std::string>(prompt)}});
}

}  // namespace switchyard::sim
