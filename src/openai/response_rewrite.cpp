#include "openai/response_rewrite.h"

#include <algorithm>
#include <unordered_map>

#include "common/byte_search.h"
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

constexpr std::string_view kUsage = "usage\"";
constexpr std::string_view kTokensPredicted = "tokens_predicted\"";
const ByteSearch usage_searcher(kUsage);
const ByteSearch predicted_searcher(kTokensPredicted);
constexpr std::string_view kModelKey = "\"model\"";
const ByteSearch model_key_searcher(kModelKey);

bool mentions_usage(std::string_view json) {
  return usage_searcher.find(json) || predicted_searcher.find(json);
}

const ByteSearch& usage_search(UsageMember member) {
  return member == UsageMember::tokens_predicted ? predicted_searcher : usage_searcher;
}

// The members every chunk of an OpenAI-shaped stream has, and `usage`.
bool common_member(std::string_view key) {
  for (std::string_view k : {"usage", "choices", "id", "object", "created", "model",
                             "system_fingerprint", "service_tier", "obfuscation"})
    if (key == k) return true;
  return false;
}

// What a usage chunk carries besides the members every chunk has and
// `usage` (llama.cpp's `timings`, which its web UI shows speeds from), as
// `,"key":value` text.
std::string extra_members(std::string_view json) {
  std::string out;
  for (const Member& m : members(json)) {
    if (common_member(m.key)) continue;
    out.push_back(',');
    out.append(m.text);
  }
  return out;
}

const ByteSearch finish_searcher("\"finish_reason\":\"");

}  // namespace

ResponseRewriter::ResponseRewriter(std::string client_model, bool strip_usage_chunk,
                                   UsageMember stream_usage, bool note_response_id)
    : model_token_(client_model.empty() ? std::string() : json_quote(client_model)),
      strip_usage_chunk_(strip_usage_chunk),
      stream_usage_(stream_usage),
      note_response_id_(note_response_id) {}

// A body's own `id` when its `object` is "response", else the id of the
// `response` an event carries (response.created and most after it). Ids are
// plain strings (resp_...): one written with an escape is not taken.
void ResponseRewriter::note_response_id(std::string_view json) {
  if (!note_response_id_ || !response_id_.empty()) return;
  std::string_view holder = json;
  if (member_text(json, "object") != std::string_view("\"response\"")) {
    const auto inner = member_text(json, "response");
    if (!inner || !inner->starts_with('{')) return;
    holder = *inner;
  }
  const auto id = member_text(holder, "id");
  if (id && id->size() > 2 && id->starts_with('"') && id->find('\\') == std::string_view::npos)
    response_id_ = id->substr(1, id->size() - 2);
}

void ResponseRewriter::note_usage(const std::optional<Usage>& u) {
  if (u) {
    if (usage_)
      usage_->merge(*u);
    else
      usage_ = u;
  }
}

// `"model":` and an engine's token, with its searcher: one for all the
// streams that name the same model, as an open stream holds it as long as
// it is open (its skip table was a 256-byte allocation per stream).
struct SeenModelMember {
  explicit SeenModelMember(std::string m) : member(std::move(m)), searcher(member) {}
  const std::string member;
  const ByteSearch searcher;
};

namespace {

// The rewriters of one thread share; entries of members no stream holds any
// more are dropped as new ones come.
std::shared_ptr<const SeenModelMember> shared_member(std::string member) {
  thread_local std::unordered_map<std::string, std::weak_ptr<const SeenModelMember>> members;
  auto& slot = members[member];
  if (auto held = slot.lock()) return held;
  auto made = std::make_shared<const SeenModelMember>(std::move(member));
  slot = made;
  if (members.size() > 64) std::erase_if(members, [](const auto& m) { return m.second.expired(); });
  return made;
}

}  // namespace

ResponseRewriter::~ResponseRewriter() = default;

std::optional<std::string_view> ResponseRewriter::model_to_replace(std::string_view json) {
  // A stream's chunks name the engine's model alike: once one has been
  // found by the scan, a search for `"model":<that token>` finds the next
  // ones for a fraction of a scan, and an event without even `"model"`
  // (Anthropic's deltas) needs no scan at all. The bytes `"model":"` outside
  // a string can only be a key (a string holds its quotes escaped).
  if (seen_) {
    if (auto at = seen_->model->searcher.find(json)) {
      if (seen_->is_clients) return std::nullopt;
      return json.substr(*at + seen_->model->member.size() - seen_->token_size, seen_->token_size);
    }
    if (!model_key_searcher.find(json)) return std::nullopt;
  }
  // "model" comes early in engines' JSON: a scan for it alone stops there.
  std::optional<std::string_view> token = member_text(json, "model");
  // Anthropic's message_start names the model inside `message`, the
  // Responses API's events inside `response`.
  for (std::string_view wrapper : {"message", "response"}) {
    if (token) break;
    if (auto object = member_text(json, wrapper); object && object->starts_with('{'))
      token = member_text(*object, "model");
  }
  if (!token || !token->starts_with('"')) return std::nullopt;
  // Remembered when the engine wrote the member without spaces.
  const auto key_at = static_cast<std::size_t>(token->data() - json.data());
  constexpr std::string_view key = "\"model\":";
  if (!seen_ && key_at >= key.size() && json.substr(key_at - key.size(), key.size()) == key)
    seen_ = SeenModel{shared_member(std::string(key) + std::string(*token)), token->size(),
                      *token == model_token_};
  if (*token == model_token_) return std::nullopt;
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
  // A body's `usage` comes last and its `model` first: the one is found from
  // the end, the other by a scan that stops there, and neither walks the
  // text between. Only a body without a last `usage` is searched whole, for
  // the other shapes find_usage() knows. The stream's shortcuts (SeenModel,
  // Anthropic's message_start) do not apply to a body sent whole.
  if (auto usage = last_member_text(json, "usage"))
    note_usage(parse_usage_object(*usage));
  else if (mentions_usage(json))
    note_usage(find_usage(json));
  note_response_id(json);
  if (model_token_.empty()) return;
  const auto token = member_text(json, "model");
  if (model_token_.empty() || !token || !token->starts_with('"') || *token == model_token_) return;
  std::string out;
  out.reserve(json.size() + model_token_.size());
  splice(json, *token, out);
  json = std::move(out);
}

bool ResponseRewriter::rewrite_event(std::string_view event, std::string& out) {
  if (held_finish_.empty() && last_delta_.apply(event, out)) return true;
  const auto json = event_json(event);
  if (!json) {
    finish_stream(out);
    out.append(event);
    return false;
  }
  const auto text = delta_text(event);
  if (!text) note_response_id(*json);
  // Most chunks carry no usage: a substring search is far cheaper than a scan.
  const auto json_text = *json;
  const bool has_usage = usage_search(stream_usage_).find(json_text).has_value();
  if (has_usage) note_usage(find_usage(json_text));
  if (!held_finish_.empty()) {
    // A stripped usage chunk's other members go out in the finish chunk, so
    // a client that did not ask for usage never gets a chunk without choices.
    if (has_usage && member_text(json_text, "choices") == std::string_view("[]")) {
      held_finish_.insert(held_finish_.rfind('}'), extra_members(json_text));
      finish_stream(out);
      return text.has_value();
    }
    finish_stream(out);
  }
  const auto token = model_token_.empty() ? std::nullopt : model_to_replace(json_text);
  if (strip_usage_chunk_ && !text && finish_searcher.find(json_text)) {
    if (token)
      splice(event, *token, held_finish_);
    else
      held_finish_.assign(event);
    return false;
  }
  const std::size_t sent_at = out.size();
  if (token)
    splice(event, *token, out);
  else
    out.append(event);
  if (text && !has_usage)
    last_delta_.remember(
        event, *text, std::string_view(out).substr(sent_at),
        token ? static_cast<std::size_t>(token->data() - event.data()) : std::string_view::npos);
  return text.has_value();
}

std::size_t ResponseRewriter::rewrite_known_event(std::string_view bytes, std::string& out) {
  return held_finish_.empty() ? last_delta_.apply_at_start(bytes, out) : 0;
}

void ResponseRewriter::finish_stream(std::string& out) {
  out.append(held_finish_);
  held_finish_.clear();
}

}  // namespace switchyard::openai
