#include "sim/vllm_format.h"

#include <boost/json.hpp>

#include "common/json_text.h"
#include "sim/responses_format.h"

namespace switchyard::sim::vllm {

namespace json = boost::json;

namespace {

json::object usage_json(const CompletionResult& r) {
  const int completion = static_cast<int>(r.tokens.size());
  // prompt_tokens_details as with --enable-prompt-tokens-details.
  return json::object{{"prompt_tokens", r.prompt_tokens},
                      {"total_tokens", r.prompt_tokens + completion},
                      {"completion_tokens", completion},
                      {"prompt_tokens_details", json::object{{"cached_tokens", r.cached_tokens}}}};
}

std::string finish_reason(const CompletionResult& r) {
  return r.stopped ? "stop" : "length";
}

http::Headers sse_headers() {
  http::Headers h;
  h.add("Content-Type", "text/event-stream; charset=utf-8");
  mark_simulated(h);
  return h;
}

// Chat and text completions differ in their choice objects only.
class OpenAiFormat final : public CompletionFormat {
 public:
  OpenAiFormat(const CompletionJob& job, std::string id, std::int64_t created)
      : chat_(job.endpoint == Endpoint::chat),
        model_(job.model),
        id_((chat_ ? "chatcmpl-" : "cmpl-") + id),
        created_(created),
        include_usage_(job.include_usage) {}

  http::Headers stream_headers() const override { return sse_headers(); }

  std::vector<std::string> open_events(const PromptStats&) override {
    if (!chat_) return {};
    json::object delta{{"role", "assistant"}, {"content", ""}};
    return {sse_event(chunk(stream_choice(std::move(delta), nullptr)))};
  }

  std::string token_event(Token, std::string_view piece, int) override {
    if (chat_) return sse_event(chunk(stream_choice(json::object{{"content", piece}}, nullptr)));
    return sse_event(chunk(text_choice(piece, nullptr, false)));
  }

  std::vector<std::string> close_events(const CompletionResult& r) override {
    std::vector<std::string> out;
    const json::value reason(finish_reason(r));
    if (chat_)
      out.push_back(sse_event(chunk(stream_choice(json::object{{"content", ""}}, reason))));
    else
      out.push_back(sse_event(chunk(text_choice("", reason, false))));
    if (include_usage_) {
      json::object u{{"id", id_},
                     {"object", chat_ ? "chat.completion.chunk" : "text_completion"},
                     {"created", created_},
                     {"model", model_},
                     {"choices", json::array{}},
                     {"usage", usage_json(r)}};
      out.push_back(sse_event(u));
    }
    out.push_back("data: [DONE]\n\n");
    return out;
  }

  http::Response full_response(const CompletionResult& r) override {
    const json::value reason(finish_reason(r));
    json::object body{{"id", id_},
                      {"object", chat_ ? "chat.completion" : "text_completion"},
                      {"created", created_},
                      {"model", model_}};
    if (chat_) {
      json::object message{{"role", "assistant"},
                           {"content", r.text},
                           {"refusal", nullptr},
                           {"annotations", nullptr},
                           {"audio", nullptr},
                           {"function_call", nullptr},
                           {"tool_calls", json::array{}},
                           {"reasoning_content", nullptr}};
      body["choices"] = json::array{json::object{{"index", 0},
                                                 {"message", std::move(message)},
                                                 {"logprobs", nullptr},
                                                 {"finish_reason", reason},
                                                 {"stop_reason", nullptr}}};
      body["service_tier"] = nullptr;
      body["system_fingerprint"] = nullptr;
      body["usage"] = usage_json(r);
      body["prompt_logprobs"] = nullptr;
    } else {
      body["choices"] = json::array{text_choice(r.text, reason, true)};
      body["usage"] = usage_json(r);
    }
    body["kv_transfer_params"] = nullptr;
    return json_reply(200, body);
  }

 private:
  json::object stream_choice(json::object delta, const json::value& reason) const {
    return json::object{{"index", 0},
                        {"delta", std::move(delta)},
                        {"logprobs", nullptr},
                        {"finish_reason", reason},
                        {"stop_reason", nullptr}};
  }
  json::object text_choice(std::string_view text, const json::value& reason, bool full) const {
    json::object c{{"index", 0},
                   {"text", text},
                   {"logprobs", nullptr},
                   {"finish_reason", reason},
                   {"stop_reason", nullptr}};
    if (full) c["prompt_logprobs"] = nullptr;
    return c;
  }
  json::object chunk(json::object choice) const {
    return json::object{{"id", id_},
                        {"object", chat_ ? "chat.completion.chunk" : "text_completion"},
                        {"created", created_},
                        {"model", model_},
                        {"choices", json::array{std::move(choice)}}};
  }

  const bool chat_;
  const std::string model_;
  const std::string id_;
  const std::int64_t created_;
  const bool include_usage_;
};

}  // namespace

http::Response json_reply(int status, const json::value& body) {
  http::Response r;
  r.status = status;
  r.headers.add("Content-Type", "application/json");
  mark_simulated(r.headers);
  r.body = to_json_text(body);
  return r;
}

http::Response error_reply(int status, std::string_view message, std::string_view type,
                           std::string_view param) {
  json::object info{{"message", message},
                    {"type", type},
                    {"param", param.empty() ? json::value(nullptr) : json::value(param)},
                    {"code", status}};
  return json_reply(status, json::object{{"error", std::move(info)}});
}

std::unique_ptr<CompletionFormat> make_format(
    const CompletionJob& job, std::string id, std::int64_t created,
    std::function<void(const boost::json::object&, const CompletionResult&)> keep) {
  if (job.endpoint == Endpoint::responses)
    return responses::make_format(job, std::move(id), created, sse_headers(),
                                  responses::Shape{&json_reply, /*timings=*/false,
                                                   /*sequence_numbers=*/true, std::move(keep)});
  return std::make_unique<OpenAiFormat>(job, std::move(id), created);
}

}  // namespace switchyard::sim::vllm
