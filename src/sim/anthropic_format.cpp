#include "sim/anthropic_format.h"

#include <boost/json.hpp>

namespace switchyard::sim::anthropic {

namespace json = boost::json;

namespace {

std::string_view string_field(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

// The text of `text` blocks, concatenated (llama-server drops the others).
std::string block_text(const json::array& blocks) {
  std::string out;
  for (const auto& b : blocks) {
    const auto* block = b.if_object();
    if (block && string_field(*block, "type") == "text") out.append(string_field(*block, "text"));
  }
  return out;
}

// One Anthropic message as chat messages: string content as it is; blocks as
// their text parts, each tool_result block as a `tool` message after it.
void convert_message(const json::value& m, json::array& out) {
  const auto* msg = m.if_object();
  const auto* content = msg ? msg->if_contains("content") : nullptr;
  if (!content || !content->is_array()) {
    out.push_back(m);
    return;
  }
  const std::string_view role = string_field(*msg, "role");
  json::array parts;
  json::array tool_results;
  for (const auto& b : content->get_array()) {
    const auto* block = b.if_object();
    if (!block) continue;
    const std::string_view type = string_field(*block, "type");
    if (type == "text") {
      parts.push_back(b);
    } else if (type == "tool_result") {
      const auto* result = block->if_contains("content");
      std::string text;
      if (result && result->is_string()) text = std::string(result->get_string());
      if (result && result->is_array()) text = block_text(result->get_array());
      tool_results.push_back(json::object{{"role", "tool"},
                                          {"tool_call_id", string_field(*block, "tool_use_id")},
                                          {"content", std::move(text)}});
    }
  }
  if (!parts.empty()) out.push_back(json::object{{"role", role}, {"content", std::move(parts)}});
  for (auto& t : tool_results) out.push_back(std::move(t));
}

// llama-server: a limit is max_tokens; EOS or a stop word ends the turn.
std::string_view stop_reason(const CompletionResult& r) {
  return r.stopped ? "end_turn" : "max_tokens";
}

json::object usage(int prompt_tokens, int cached_tokens, int output_tokens) {
  return json::object{{"cache_read_input_tokens", cached_tokens},
                      {"input_tokens", prompt_tokens - cached_tokens},
                      {"output_tokens", output_tokens}};
}

class MessagesFormat final : public CompletionFormat {
 public:
  MessagesFormat(const CompletionJob& job, std::string id, http::Headers stream_headers,
                 JsonReply json_reply)
      : model_(job.model),
        id_(std::move(id)),
        stream_headers_(std::move(stream_headers)),
        json_reply_(json_reply) {}

  http::Headers stream_headers() const override { return stream_headers_; }

  std::vector<std::string> open_events(const PromptStats& p) override {
    json::object message{{"id", id_},
                         {"type", "message"},
                         {"role", "assistant"},
                         {"content", json::array{}},
                         {"model", model_},
                         {"stop_reason", nullptr},
                         {"stop_sequence", nullptr},
                         {"usage", usage(p.prompt_tokens, p.cached_tokens, 0)}};
    return {named_event("message_start",
                        json::object{{"type", "message_start"}, {"message", std::move(message)}})};
  }

  std::string token_event(Token, std::string_view piece, int) override {
    std::string out;
    if (piece.empty()) return out;
    if (!text_started_) {
      text_started_ = true;
      out = named_event(
          "content_block_start",
          json::object{{"type", "content_block_start"},
                       {"index", 0},
                       {"content_block", json::object{{"type", "text"}, {"text", ""}}}});
    }
    out +=
        named_event("content_block_delta",
                    json::object{{"type", "content_block_delta"},
                                 {"index", 0},
                                 {"delta", json::object{{"type", "text_delta"}, {"text", piece}}}});
    return out;
  }

  std::vector<std::string> close_events(const CompletionResult& r) override {
    std::vector<std::string> out;
    if (text_started_)
      out.push_back(named_event("content_block_stop",
                                json::object{{"type", "content_block_stop"}, {"index", 0}}));
    json::object delta{{"stop_reason", stop_reason(r)}, {"stop_sequence", nullptr}};
    out.push_back(named_event(
        "message_delta",
        json::object{
            {"type", "message_delta"},
            {"delta", std::move(delta)},
            {"usage", json::object{{"output_tokens", static_cast<int>(r.tokens.size())}}}}));
    out.push_back(named_event("message_stop", json::object{{"type", "message_stop"}}));
    return out;
  }

  http::Response full_response(const CompletionResult& r) override {
    json::array content;
    if (!r.text.empty()) content.push_back(json::object{{"type", "text"}, {"text", r.text}});
    json::object body{
        {"id", id_},
        {"type", "message"},
        {"role", "assistant"},
        {"content", std::move(content)},
        {"model", model_},
        {"stop_reason", stop_reason(r)},
        {"stop_sequence", nullptr},
        {"usage", usage(r.prompt_tokens, r.cached_tokens, static_cast<int>(r.tokens.size()))}};
    return json_reply_(200, body);
  }

 private:
  const std::string model_;
  const std::string id_;
  const http::Headers stream_headers_;
  const JsonReply json_reply_;
  bool text_started_ = false;
};

}  // namespace

std::variant<json::object, RequestError> to_chat_request(const json::object& body) {
  json::array messages;
  if (const auto* system = body.if_contains("system"); system && !system->is_null()) {
    std::string text;
    if (system->is_string()) text = std::string(system->get_string());
    if (system->is_array()) text = block_text(system->get_array());
    messages.push_back(json::object{{"role", "system"}, {"content", std::move(text)}});
  }
  const auto* in = body.if_contains("messages");
  if (!in) return RequestError{500, "'messages' is required", "messages"};
  if (in->is_array())
    for (const auto& m : in->get_array()) convert_message(m, messages);
  json::object chat{{"messages", std::move(messages)}};
  if (const auto* stop = body.if_contains("stop_sequences")) chat["stop"] = *stop;
  const auto* max_tokens = body.if_contains("max_tokens");
  chat["max_tokens"] = max_tokens ? *max_tokens : json::value(4096);
  for (std::string_view key : {"temperature", "top_p", "top_k", "stream", "model"})
    if (const auto* v = body.if_contains(key)) chat[key] = *v;
  return chat;
}

std::variant<CompletionJob, RequestError> parse_messages(const json::object& body,
                                                         const Tokenizer& tokenizer,
                                                         const std::string& model) {
  auto chat = to_chat_request(body);
  if (auto* e = std::get_if<RequestError>(&chat)) return *e;
  auto job = parse_completion(Endpoint::chat, std::get<json::object>(chat), tokenizer, model);
  if (auto* j = std::get_if<CompletionJob>(&job)) j->endpoint = Endpoint::messages;
  return job;
}

std::unique_ptr<CompletionFormat> make_format(const CompletionJob& job, std::string id,
                                              http::Headers stream_headers, JsonReply json_reply) {
  return std::make_unique<MessagesFormat>(job, std::move(id), std::move(stream_headers),
                                          json_reply);
}

}  // namespace switchyard::sim::anthropic
