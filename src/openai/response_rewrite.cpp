#include "openai/response_rewrite.h"

#include <array>

#include "common/json_text.h"
#include "openai/json_scan.h"

namespace switchyard::openai {

namespace {

// The JSON payload of an event's single `data:` line, as a view into it.
std::optional<std::string_view> event_json(std::string_view event) {
  std::size_t line = 0;
  while (line < event.size()) {
    const std::size_t eol = event.find('\n', line);
    const std::string_view text =
        event.substr(line, eol == std::string_view::npos ? std::string_view::npos : eol - line);
    if (text.starts_with("data:")) {
      std::string_view payload = text.substr(5);
      if (payload.starts_with(' ')) payload.remove_prefix(1);
      if (!payload.empty() && payload.back() == '\r') payload.remove_suffix(1);
      if (!payload.starts_with('{')) return std::nullopt;
      return payload;
    }
    if (eol == std::string_view::npos) break;
    line = eol + 1;
  }
  return std::nullopt;
}

bool mentions_usage(std::string_view json) {
  return json.find("usage\"") != std::string_view::npos ||
         json.find("tokens_predicted\"") != std::string_view::npos;
}

}  // namespace

ResponseRewriter::ResponseRewriter(std::string client_model, bool strip_usage_chunk)
    : model_token_(client_model.empty() ? std::string() : json_quote(client_model)),
      strip_usage_chunk_(strip_usage_chunk) {}

void ResponseRewriter::note_usage(std::string_view json) {
  if (auto u = find_usage(json)) {
    if (usage_)
      usage_->merge(*u);
    else
      usage_ = u;
  }
}

std::optional<std::string_view> ResponseRewriter::model_to_replace(std::string_view json) const {
  // "model" comes early in engines' JSON: a scan for it alone stops there.
  std::optional<std::string_view> token = member_text(json, "model");
  // Anthropic's message_start names the model inside `message`.
  if (!token) {
    if (auto message = member_text(json, "message"); message && message->starts_with('{'))
      token = member_text(*message, "model");
  }
  if (!token || !token->starts_with('"') || *token == model_token_) return std::nullopt;
  return token;
}

void ResponseRewriter::splice(std::string_view json, std::string_view token,
                              std::string& out) const {
  const auto at = static_cast<std::size_t>(token.data() - json.data());
  out.append(json.substr(0, at));
  out.append(model_token_);
  out.append(json.substr(at + token.size()));
}

void ResponseRewriter::rewrite_body(std::string& json) {
  if (mentions_usage(json)) note_usage(json);
  if (model_token_.empty()) return;
  const auto token = model_to_replace(json);
  if (!token) return;
  std::string out;
  out.reserve(json.size() + model_token_.size());
  splice(json, *token, out);
  json = std::move(out);
}

void ResponseRewriter::rewrite_event(std::string_view event, std::string& out) {
  const auto json = event_json(event);
  if (!json) {
    out.append(event);
    return;
  }
  // Most chunks carry no usage: a substring search is far cheaper than a scan.
  if (mentions_usage(*json)) {
    note_usage(*json);
    if (strip_usage_chunk_ && member_text(*json, "choices") == std::string_view("[]")) return;
  }
  const auto token = model_token_.empty() ? std::nullopt : model_to_replace(*json);
  if (!token) {
    out.append(event);
    return;
  }
  splice(event, *token, out);
}

}  // namespace switchyard::openai
