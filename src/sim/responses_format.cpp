#include "sim/responses_format.h"

#include <boost/json.hpp>

#include "sim/llamacpp_format.h"

namespace switchyard::sim::responses {

namespace json = boost::json;

namespace {

std::string_view string_field(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

// The text of a message item's content: a string, or its input_text /
// output_text parts concatenated.
std::variant<std::string, RequestError> item_text(const json::value& content) {
  if (content.is_string()) return std::string(content.get_string());
  std::string text;
  if (!content.is_array()) return text;
  for (const auto& p : content.get_array()) {
    const auto* part = p.if_object();
    const std::string_view type = part ? string_field(*part, "type") : std::string_view();
    if (type == "input_text" || type == "output_text") {
      if (!part->if_contains("text"))
        return RequestError{400, "'Input text' requires 'text'", "input"};
      text.append(string_field(*part, "text"));
    } else if (type != "input_image") {
      return RequestError{400, "'type' must be one of 'input_text', 'input_image', or 'input_file'",
                          "input"};
    }
  }
  return text;
}

// One input item as a chat message: a message with its role, a function
// call's output as a `tool` message; other items (reasoning, function calls)
// carry no prompt text of their own here.
std::variant<std::optional<json::object>, RequestError> item_message(const json::value& v) {
  const auto* item = v.if_object();
  if (!item) return RequestError{400, "each 'input' item must be an object", "input"};
  if (string_field(*item, "type") == "function_call_output")
    return json::object{{"role", "tool"},
                        {"tool_call_id", string_field(*item, "call_id")},
                        {"content", string_field(*item, "output")}};
  const auto* content = item->if_contains("content");
  const std::string_view role = string_field(*item, "role");
  if (!content || role.empty()) return std::optional<json::object>();
  auto text = item_text(*content);
  if (auto* e = std::get_if<RequestError>(&text)) return *e;
  return json::object{{"role", role == "developer" ? "system" : role},
                      {"content", std::get<std::string>(std::move(text))}};
}

json::object usage(const CompletionResult& r) {
  const int output = static_cast<int>(r.tokens.size());
  return json::object{{"input_tokens", r.prompt_tokens},
                      {"output_tokens", output},
                      {"total_tokens", r.prompt_tokens + output},
                      {"input_tokens_details", json::object{{"cached_tokens", r.cached_tokens}}}};
}

json::object text_part(std::string_view text) {
  return json::object{{"type", "output_text"},
                      {"annotations", json::array{}},
                      {"logprobs", json::array{}},
                      {"text", text}};
}

class ResponsesFormat final : public CompletionFormat {
 public:
  ResponsesFormat(const CompletionJob& job, std::string id, std::int64_t created,
                  http::Headers stream_headers, Shape shape)
      : model_(job.model),
        id_("resp_" + id),
        message_id_("msg_" + id),
        created_(created),
        stream_headers_(std::move(stream_headers)),
        shape_(std::move(shape)) {}

  http::Headers stream_headers() const override { return stream_headers_; }

  std::vector<std::string> open_events(const PromptStats&) override {
    std::vector<std::string> out;
    for (std::string_view name : {"response.created", "response.in_progress"})
      out.push_back(
          event(name, json::object{{"type", name},
                                   {"response", json::object{{"id", id_},
                                                             {"object", "response"},
                                                             {"status", "in_progress"}}}}));
    return out;
  }

  std::string token_event(Token, std::string_view piece, int) override {
    std::string out;
    if (piece.empty()) return out;
    if (!text_started_) {
      text_started_ = true;
      out = event("response.output_item.added",
                  json::object{{"type", "response.output_item.added"},
                               {"item", json::object{{"content", json::array{}},
                                                     {"id", message_id_},
                                                     {"role", "assistant"},
                                                     {"status", "in_progress"},
                                                     {"type", "message"}}}});
      out += event("response.content_part.added",
                   json::object{{"type", "response.content_part.added"},
                                {"item_id", message_id_},
                                {"part", json::object{{"type", "output_text"}, {"text", ""}}}});
    }
    out += event("response.output_text.delta", json::object{{"type", "response.output_text.delta"},
                                                            {"item_id", message_id_},
                                                            {"delta", piece}});
    return out;
  }

  std::vector<std::string> close_events(const CompletionResult& r) override {
    std::vector<std::string> out;
    if (!r.text.empty()) {
      out.push_back(event(
          "response.output_text.done",
          json::object{
              {"type", "response.output_text.done"}, {"item_id", message_id_}, {"text", r.text}}));
      out.push_back(
          event("response.content_part.done", json::object{{"type", "response.content_part.done"},
                                                           {"item_id", message_id_},
                                                           {"part", text_part(r.text)}}));
      json::object item{{"type", "message"},
                        {"status", "completed"},
                        {"id", message_id_},
                        {"content", json::array{text_part(r.text)}},
                        {"role", "assistant"}};
      out.push_back(
          event("response.output_item.done",
                json::object{{"type", "response.output_item.done"}, {"item", std::move(item)}}));
    }
    json::object completed{{"type", "response.completed"}, {"response", response_object(r)}};
    if (shape_.timings) completed["timings"] = llamacpp::timings_json(r);
    if (shape_.keep) shape_.keep(completed["response"].as_object(), r);
    out.push_back(event("response.completed", std::move(completed)));
    return out;
  }

  // llama-server's JSON writes members in name order.
  http::Response full_response(const CompletionResult& r) override {
    json::array output;
    if (!r.text.empty())
      output.push_back(json::object{{"content", json::array{text_part(r.text)}},
                                    {"id", message_id_},
                                    {"role", "assistant"},
                                    {"status", "completed"},
                                    {"type", "message"}});
    json::object body{
        {"completed_at", created_}, {"created_at", created_}, {"id", id_},
        {"model", model_},          {"object", "response"},   {"output", std::move(output)},
        {"status", "completed"},    {"usage", usage(r)}};
    if (shape_.keep) shape_.keep(body, r);
    return shape_.json_reply(200, body);
  }

 private:
  // `event: NAME` and its data, numbered when the engine numbers them.
  std::string event(std::string_view name, json::object data) {
    if (shape_.sequence_numbers) data["sequence_number"] = sequence_++;
    return named_event(name, data);
  }

  json::object response_object(const CompletionResult& r) const {
    json::array output;
    if (!r.text.empty())
      output.push_back(json::object{{"type", "message"},
                                    {"status", "completed"},
                                    {"id", message_id_},
                                    {"content", json::array{text_part(r.text)}},
                                    {"role", "assistant"}});
    return json::object{{"id", id_},
                        {"object", "response"},
                        {"created_at", created_},
                        {"status", "completed"},
                        {"model", model_},
                        {"output", std::move(output)},
                        {"usage", usage(r)}};
  }

  const std::string model_;
  const std::string id_;
  const std::string message_id_;
  const std::int64_t created_;
  const http::Headers stream_headers_;
  const Shape shape_;
  bool text_started_ = false;
  int sequence_ = 0;
};

}  // namespace

std::variant<json::object, RequestError> to_chat_request(const json::object& body,
                                                         bool keeps_responses) {
  const auto* input = body.if_contains("input");
  if (!input) return RequestError{400, "'input' is required", "input"};
  if (!keeps_responses && !string_field(body, "previous_response_id").empty())
    return RequestError{400, "llama.cpp does not support 'previous_response_id'.",
                        "previous_response_id"};
  json::array messages;
  if (body.contains("instructions"))
    messages.push_back(
        json::object{{"role", "system"}, {"content", string_field(body, "instructions")}});
  if (input->is_string()) {
    messages.push_back(json::object{{"role", "user"}, {"content", *input}});
  } else if (input->is_array()) {
    for (const auto& item : input->get_array()) {
      auto message = item_message(item);
      if (auto* e = std::get_if<RequestError>(&message)) return *e;
      if (auto& m = std::get<std::optional<json::object>>(message)) messages.push_back(*m);
    }
  } else {
    return RequestError{400, "'input' must be a string or array of objects", "input"};
  }
  json::object chat{{"messages", std::move(messages)}};
  if (const auto* max = body.if_contains("max_output_tokens")) chat["max_tokens"] = *max;
  for (std::string_view key : {"temperature", "top_p", "stream", "model"})
    if (const auto* v = body.if_contains(key)) chat[key] = *v;
  return chat;
}

std::variant<CompletionJob, RequestError> parse_responses(const json::object& body,
                                                          const Tokenizer& tokenizer,
                                                          const std::string& model,
                                                          bool keeps_responses) {
  auto chat = to_chat_request(body, keeps_responses);
  if (auto* e = std::get_if<RequestError>(&chat)) return *e;
  auto job = parse_completion(Endpoint::chat, std::get<json::object>(chat), tokenizer, model);
  if (auto* j = std::get_if<CompletionJob>(&job)) j->endpoint = Endpoint::responses;
  return job;
}

std::unique_ptr<CompletionFormat> make_format(const CompletionJob& job, std::string id,
                                              std::int64_t created, http::Headers stream_headers,
                                              Shape shape) {
  return std::make_unique<ResponsesFormat>(job, std::move(id), created, std::move(stream_headers),
                                           std::move(shape));
}

}  // namespace switchyard::sim::responses
