#include "sim/llamacpp_format.h"

#include <boost/json.hpp>

#include <algorithm>
#include <set>

#include "common/json_text.h"
#include "sim/anthropic_format.h"
#include "sim/responses_format.h"

namespace switchyard::sim::llamacpp {

namespace json = boost::json;

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

// The fuller set /completion echoes as generation_settings
// (completion_ignore_eos.body).
constexpr std::string_view kGenerationSettings =
    R"({"seed":4294967295,"temperature":0.800000011920929,"dynatemp_range":0.0,)"
    R"("dynatemp_exponent":1.0,"top_k":40,"top_p":0.949999988079071,"min_p":0.05000000074505806,)"
    R"("top_n_sigma":-1.0,"xtc_probability":0.0,"xtc_threshold":0.10000000149011612,"typical_p":1.0,)"
    R"("repeat_last_n":64,"repeat_penalty":1.0,"presence_penalty":0.0,"frequency_penalty":0.0,)"
    R"("dry_multiplier":0.0,"dry_base":1.75,"dry_allowed_length":2,"dry_penalty_last_n":64,)"
    R"("dry_sequence_breakers":["\n",":","\"","*"],)"
    R"("mirostat":0,"mirostat_tau":5.0,"mirostat_eta":0.10000000149011612,"adaptive_target":-1.0,)"
    R"("adaptive_decay":0.8999999761581421,"stop":[],"max_tokens":-1,"n_predict":-1,"n_keep":0,)"
    R"("n_discard":0,"ignore_eos":false,"stream":false,"logit_bias":[],"n_probs":0,"min_keep":0,)"
    R"("grammar":"","grammar_lazy":false,"grammar_triggers":[],"preserved_tokens":[],)"
    R"("chat_format":"Content-only","reasoning_format":"deepseek","reasoning_in_content":false,)"
    R"("generation_prompt":"",)"
    R"("samplers":["penalties","dry","top_n_sigma","top_k","typ_p","top_p","min_p","xtc",)"
    R"("temperature"],"speculative.types":"none","timings_per_token":false,)"
    R"("post_sampling_probs":false,"backend_sampling":false,"lora":[]})";

json::object parsed_object(std::string_view text) {
  return json::parse(text).as_object();
}

void set_request(json::object& params, const RequestInfo& info) {
  params["max_tokens"] = info.n_predict;
  params["n_predict"] = info.n_predict;
  params["ignore_eos"] = info.ignore_eos;
  params["stream"] = info.stream;
}

json::object usage_json(const CompletionResult& r) {
  const int completion = static_cast<int>(r.tokens.size());
  return json::object{{"completion_tokens", completion},
                      {"prompt_tokens", r.prompt_tokens},
                      {"total_tokens", r.prompt_tokens + completion},
                      {"prompt_tokens_details", json::object{{"cached_tokens", r.cached_tokens}}}};
}

std::string finish_reason(const CompletionResult& r) {
  return r.stopped ? "stop" : "length";
}

// Shared by the OpenAI-shaped formats: headers of a stream.
http::Headers sse_headers() {
  http::Headers h = base_headers();
  h.add("X-Accel-Buffering", "no");
  h.add("Content-Type", "text/event-stream");
  return h;
}

class ChatFormat final : public CompletionFormat {
 public:
  ChatFormat(const CompletionJob& job, std::string id, std::int64_t created)
      : model_(job.model),
        id_(std::move(id)),
        created_(created),
        include_usage_(job.include_usage) {}

  http::Headers stream_headers() const override { return sse_headers(); }

  std::vector<std::string> open_events(const PromptStats&) override {
    json::object delta{{"role", "assistant"}, {"content", nullptr}};
    return {sse_event(chunk(
        json::object{{"finish_reason", nullptr}, {"index", 0}, {"delta", std::move(delta)}}))};
  }

  std::string token_event(Token, std::string_view piece, int) override {
    return sse_event(chunk(json::object{
        {"finish_reason", nullptr}, {"index", 0}, {"delta", json::object{{"content", piece}}}}));
  }

  std::vector<std::string> close_events(const CompletionResult& r) override {
    std::vector<std::string> out;
    auto last = chunk(
        json::object{{"finish_reason", finish_reason(r)}, {"index", 0}, {"delta", json::object{}}});
    if (!include_usage_) last["timings"] = timings_json(r);
    out.push_back(sse_event(last));
    if (include_usage_) {
      json::object u;
      u["choices"] = json::array{};
      u["created"] = created_;
      u["id"] = id_;
      u["model"] = model_;
      u["system_fingerprint"] = kFingerprint;
      u["object"] = "chat.completion.chunk";
      u["usage"] = usage_json(r);
      u["timings"] = timings_json(r);
      out.push_back(sse_event(u));
    }
    out.push_back("data: [DONE]\n\n");
    return out;
  }

  http::Response full_response(const CompletionResult& r) override {
    json::object body;
    body["choices"] = json::array{
        json::object{{"finish_reason", finish_reason(r)},
                     {"index", 0},
                     {"message", json::object{{"role", "assistant"}, {"content", r.text}}}}};
    body["created"] = created_;
    body["model"] = model_;
    body["system_fingerprint"] = kFingerprint;
    body["object"] = "chat.completion";
    body["usage"] = usage_json(r);
    body["id"] = id_;
    body["timings"] = timings_json(r);
    return json_reply(200, body);
  }

 private:
  json::object chunk(json::object choice) const {
    json::object o;
    o["choices"] = json::array{std::move(choice)};
    o["created"] = created_;
    o["id"] = id_;
    o["model"] = model_;
    o["system_fingerprint"] = kFingerprint;
    o["object"] = "chat.completion.chunk";
    return o;
  }

  const std::string model_;
  const std::string id_;
  const std::int64_t created_;
  const bool include_usage_;
};

class TextFormat final : public CompletionFormat {
 public:
  TextFormat(const CompletionJob& job, std::string id, std::int64_t created)
      : model_(job.model), id_(std::move(id)), created_(created) {}

  http::Headers stream_headers() const override { return sse_headers(); }

  std::string token_event(Token, std::string_view piece, int) override {
    auto o = head(json::object{
        {"text", piece}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", nullptr}});
    o["id"] = id_;
    return sse_event(o);
  }

  std::vector<std::string> close_events(const CompletionResult& r) override {
    auto last = head(json::object{
        {"text", ""}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_reason(r)}});
    last["usage"] = usage_json(r);
    last["id"] = id_;
    last["timings"] = timings_json(r);
    return {sse_event(last), "data: [DONE]\n\n"};
  }

  http::Response full_response(const CompletionResult& r) override {
    auto body = head(json::object{{"text", r.text},
                                  {"index", 0},
                                  {"logprobs", nullptr},
                                  {"finish_reason", finish_reason(r)}});
    body["usage"] = usage_json(r);
    body["id"] = id_;
    body["timings"] = timings_json(r);
    return json_reply(200, body);
  }

 private:
  json::object head(json::object choice) const {
    json::object o;
    o["choices"] = json::array{std::move(choice)};
    o["created"] = created_;
    o["model"] = model_;
    o["system_fingerprint"] = kFingerprint;
    o["object"] = "text_completion";
    return o;
  }

  const std::string model_;
  const std::string id_;
  const std::int64_t created_;
};

// POST /completion: llama-server's own API (completion_stream.sse,
// completion_ignore_eos.body). Its stream ends on a "stop":true chunk, with
// no [DONE].
class NativeFormat final : public CompletionFormat {
 public:
  explicit NativeFormat(const CompletionJob& job)
      : model_(job.model),
        prompt_text_(job.prompt_text),
        n_prompt_(static_cast<int>(job.prompt.size())),
        info_{job.max_tokens.value_or(-1), job.ignore_eos, job.stream} {}

  http::Headers stream_headers() const override { return sse_headers(); }

  std::string token_event(Token token, std::string_view piece, int count) override {
    json::object o{{"index", 0},
                   {"content", piece},
                   {"tokens", json::array{token}},
                   {"stop", false},
                   {"id_slot", -1},
                   {"tokens_predicted", count},
                   {"tokens_evaluated", n_prompt_}};
    return sse_event(o);
  }

  std::vector<std::string> close_events(const CompletionResult& r) override {
    return {sse_event(final_body(r, ""))};
  }

  http::Response full_response(const CompletionResult& r) override {
    return json_reply(200, final_body(r, r.text));
  }

 private:
  json::object final_body(const CompletionResult& r, std::string_view content) const {
    const int predicted = static_cast<int>(r.tokens.size());
    auto settings = parsed_object(kGenerationSettings);
    set_request(settings, info_);
    if (info_.ignore_eos)  // EOS banned: logit bias -inf, which JSON writes as null
      settings["logit_bias"] =
          json::array{json::object{{"bias", nullptr}, {"token", Tokenizer::kEos}}};
    return json::object{{"index", 0},
                        {"content", content},
                        {"tokens", json::array{}},
                        {"id_slot", r.slot},
                        {"stop", true},
                        {"model", model_},
                        {"tokens_predicted", predicted},
                        {"tokens_evaluated", n_prompt_},
                        {"generation_settings", std::move(settings)},
                        {"prompt", prompt_text_},
                        {"has_new_line", r.text.find('\n') != std::string::npos},
                        {"truncated", false},
                        {"stop_type", r.stopped ? "eos" : "limit"},
                        {"stopping_word", ""},
                        {"tokens_cached", std::max(0, n_prompt_ + predicted - 1)},
                        {"timings", timings_json(r)}};
  }

  const std::string model_;
  const std::string prompt_text_;
  const int n_prompt_;
  const RequestInfo info_;
};

}  // namespace

http::Headers base_headers() {
  http::Headers h;
  h.add("Access-Control-Allow-Origin", "");
  mark_simulated(h);
  return h;
}

http::Response json_reply(int status, const json::value& body) {
  http::Response r;
  r.status = status;
  r.headers = base_headers();
  r.headers.add("Content-Type", "application/json; charset=utf-8");
  // llama-server closes after errors; the server adds Keep-Alive to the rest.
  if (status >= 400) r.headers.add("Connection", "close");
  r.body = to_json_text(body);
  return r;
}

http::Response error_reply(int status, std::string_view message, std::string_view type) {
  json::object inner{{"code", status}, {"message", message}, {"type", type}};
  return json_reply(status, json::object{{"error", std::move(inner)}});
}

json::object default_params() {
  return parsed_object(kDefaultParams);
}

json::object slot_params(const RequestInfo& info) {
  auto params = default_params();
  params["reasoning_format"] = "deepseek";
  set_request(params, info);
  return params;
}

json::object timings_json(const CompletionResult& r) {
  const int prompt_n = r.prompt_tokens - r.cached_tokens;
  const int predicted_n = static_cast<int>(r.tokens.size());
  const auto per_token = [](double ms, int n) { return n > 0 ? ms / n : 0.0; };
  const auto per_second = [](double ms, int n) { return ms > 0 ? 1e3 * n / ms : 0.0; };
  return json::object{
      {"cache_n", r.cached_tokens},
      {"prompt_n", prompt_n},
      {"prompt_ms", r.prompt_ms},
      {"prompt_per_token_ms", per_token(r.prompt_ms, prompt_n)},
      {"prompt_per_second", per_second(r.prompt_ms, prompt_n)},
      {"predicted_n", predicted_n},
      {"predicted_ms", r.predicted_ms},
      {"predicted_per_token_ms", per_token(r.predicted_ms, predicted_n)},
      {"predicted_per_second", per_second(r.predicted_ms, predicted_n) * r.over_report}};
}

std::variant<std::string, RequestError> infill_prompt(const json::object& body) {
  const auto text = [&](std::string_view key) -> const json::string* {
    const auto* v = body.if_contains(key);
    return v && v->is_string() ? &v->get_string() : nullptr;
  };
  if (body.contains("prompt") && !text("prompt"))
    return RequestError{400, "\"prompt\" must be a string", "prompt"};
  if (!body.contains("input_prefix"))
    return RequestError{400, "\"input_prefix\" is required", "input_prefix"};
  if (!body.contains("input_suffix"))
    return RequestError{400, "\"input_suffix\" is required", "input_suffix"};
  if (!text("input_prefix") || !text("input_suffix"))
    return RequestError{400, "\"input_prefix\" and \"input_suffix\" must be strings",
                        "input_prefix"};
  std::string prompt = "<|fim_prefix|>";
  prompt.append(*text("input_prefix"));
  prompt.append("<|fim_suffix|>");
  prompt.append(*text("input_suffix"));
  prompt.append("<|fim_middle|>");
  if (const auto* p = text("prompt")) prompt.append(*p);
  return prompt;
}

http::Response rerank(const json::object& body, const Tokenizer& tok,
                      const std::string& model_name) {
  const bool tei = body.contains("texts");
  const auto* query = body.if_contains("query");
  if (!query) return error_reply(400, "\"query\" must be provided", "invalid_request_error");
  if (!query->is_string())
    return error_reply(400, "\"query\" must be a string", "invalid_request_error");
  const auto* docs = body.if_contains(tei ? "texts" : "documents");
  if (!docs || !docs->is_array() || docs->get_array().empty() ||
      std::any_of(docs->get_array().begin(), docs->get_array().end(),
                  [](const json::value& d) { return !d.is_string(); }))
    return error_reply(400, "\"documents\" must be a non-empty string array",
                       "invalid_request_error");
  const auto& documents = docs->get_array();
  const auto query_tokens = tok.tokenize(query->get_string());
  const std::set<Token> query_words(query_tokens.begin(), query_tokens.end());
  struct Ranked {
    int index;
    double score;
  };
  std::vector<Ranked> ranked;
  int n_tokens = 0;
  for (std::size_t i = 0; i < documents.size(); ++i) {
    const auto doc_tokens = tok.tokenize(documents[i].get_string());
    const std::set<Token> doc_words(doc_tokens.begin(), doc_tokens.end());
    const auto shared = std::count_if(query_words.begin(), query_words.end(),
                                      [&](Token t) { return doc_words.contains(t); });
    const double score =
        query_words.empty() ? 0.0 : static_cast<double>(shared) / query_words.size();
    ranked.push_back({static_cast<int>(i), score});
    n_tokens += static_cast<int>(query_tokens.size() + doc_tokens.size()) + 4;
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Ranked& a, const Ranked& b) { return a.score > b.score; });
  int top_n = static_cast<int>(documents.size());
  if (const auto* n = body.if_contains("top_n"); n && n->is_int64())
    top_n = static_cast<int>(std::clamp<std::int64_t>(n->get_int64(), 0, top_n));
  ranked.resize(static_cast<std::size_t>(top_n));
  const bool return_text = tei && body.contains("return_text") &&
                           body.at("return_text").is_bool() && body.at("return_text").get_bool();
  json::array results;
  for (const auto& r : ranked) {
    json::object elem{{"index", r.index}, {tei ? "score" : "relevance_score", r.score}};
    if (return_text) elem["text"] = documents[static_cast<std::size_t>(r.index)];
    results.push_back(std::move(elem));
  }
  if (tei) return json_reply(200, results);
  const auto* model = body.if_contains("model");
  json::object out{
      {"model", model && model->is_string() ? json::value(*model) : json::value(model_name)},
      {"object", "list"},
      {"usage", json::object{{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}},
      {"results", std::move(results)}};
  return json_reply(200, out);
}

std::unique_ptr<CompletionFormat> make_format(const CompletionJob& job, std::string id,
                                              std::int64_t created) {
  switch (job.endpoint) {
    case Endpoint::chat:
      return std::make_unique<ChatFormat>(job, std::move(id), created);
    case Endpoint::text:
      return std::make_unique<TextFormat>(job, std::move(id), created);
    case Endpoint::messages:
      return anthropic::make_format(job, std::move(id), sse_headers(), &json_reply);
    case Endpoint::responses:
      return responses::make_format(
          job, std::move(id), created, sse_headers(),
          responses::Shape{&json_reply, /*timings=*/true, /*sequence_numbers=*/false, {}});
    case Endpoint::native:
      break;
  }
  return std::make_unique<NativeFormat>(job);
}

}  // namespace switchyard::sim::llamacpp
