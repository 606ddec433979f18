#include "openai/messages_checks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

namespace switchyard::openai {

namespace {

// The content block types Anthropic's API accepts in a request
// (docs.anthropic.com, Messages: "content"), server tools' results included.
constexpr std::array<std::string_view, 17> kBlockTypes = {
    "text",
    "image",
    "document",
    "search_result",
    "thinking",
    "redacted_thinking",
    "tool_use",
    "tool_result",
    "server_tool_use",
    "web_search_tool_result",
    "web_fetch_tool_result",
    "code_execution_tool_result",
    "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result",
    "mcp_tool_use",
    "mcp_tool_result",
    "container_upload",
};

FieldError field_error(std::string field, std::string_view what) {
  std::string message = fmt::format("'{}' {}", field, what);
  return FieldError{std::move(message), std::move(field)};
}

std::optional<FieldError> check_block(simdjson::dom::element block, const std::string& at) {
  simdjson::dom::object fields;
  if (block.get_object().get(fields)) return field_error(at, "must be an object");
  std::string_view type;
  if (fields["type"].get(type))
    return field_error(at + ".type", "is required and must be a string");
  if (std::find(kBlockTypes.begin(), kBlockTypes.end(), type) == kBlockTypes.end())
    return field_error(at + ".type", fmt::format("'{}' is not a content block type; expected "
                                                 "one of: {}",
                                                 type, fmt::join(kBlockTypes, ", ")));
  if (type == "text" && !fields["text"].is_string())
    return field_error(at + ".text", "is required in a text block and must be a string");
  return std::nullopt;
}

// A string, or an array of content blocks (system: of text blocks only).
std::optional<FieldError> check_content(simdjson::dom::element content, const std::string& at,
                                        bool text_only) {
  if (content.is_string()) return std::nullopt;
  simdjson::dom::array blocks;
  if (content.get_array().get(blocks))
    return field_error(at, text_only ? "must be a string or an array of text blocks"
                                     : "must be a string or an array of content blocks");
  std::size_t i = 0;
  for (auto block : blocks) {
    const std::string block_at = fmt::format("{}.{}", at, i++);
    if (auto e = check_block(block, block_at)) return e;
    if (text_only && block["type"].get_string().value_unsafe() != "text")
      return field_error(block_at + ".type", "must be 'text'");
  }
  return std::nullopt;
}

std::optional<FieldError> check_message(simdjson::dom::element message, std::size_t index) {
  const std::string at = fmt::format("messages.{}", index);
  simdjson::dom::object fields;
  if (message.get_object().get(fields)) return field_error(at, "must be an object");
  std::string_view role;
  if (fields["role"].get(role)) return field_error(at + ".role", "is required");
  // Anthropic takes mid-conversation system messages, and Claude Code sends
  // them (since 2.1.154: its context and agent lists, on every request).
  if (role != "user" && role != "assistant" && role != "system")
    return field_error(at + ".role",
                       fmt::format("must be 'user', 'assistant' or 'system', not '{}'", role));
  simdjson::dom::element content;
  if (fields["content"].get(content)) return field_error(at + ".content", "is required");
  return check_content(content, at + ".content", role == "system");
}

}  // namespace

std::optional<FieldError> check_messages_body(simdjson::dom::object body, bool needs_max_tokens) {
  if (needs_max_tokens) {
    simdjson::dom::element max_tokens;
    if (body["max_tokens"].get(max_tokens)) return field_error("max_tokens", "is required");
    // A count above any int64 (is_uint64 alone) is >= 1.
    if ((!max_tokens.is_int64() && !max_tokens.is_uint64()) ||
        (max_tokens.is_int64() && max_tokens.get_int64().value_unsafe() < 1))
      return field_error("max_tokens", "must be an integer >= 1");
  }
  simdjson::dom::array messages;
  if (!body["messages"].get(messages)) {
    std::size_t i = 0;
    for (auto message : messages)
      if (auto e = check_message(message, i++)) return e;
  }
  simdjson::dom::element system;
  if (!body["system"].get(system)) return check_content(system, "system", true);
  return std::nullopt;
}

}  // namespace switchyard::openai
