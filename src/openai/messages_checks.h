// What Anthropic's Messages API requires of a body beyond being JSON: a
// max_tokens of at least 1, messages of role user or assistant whose content
// is a string or an array of known content blocks, a system prompt of text.
// Anthropic answers each with a 400 invalid_request_error naming the field
// (`messages.2.content.0.type`); so does the gateway, before an engine runs
// (llama-server runs a body without max_tokens until its context is full).
#pragma once

#include <simdjson.h>

#include <optional>
#include <string>

namespace switchyard::openai {

// Why a body is refused: one line naming what was wrong, and the field it is
// about (a 400's `param`; empty when it is the body as a whole).
struct FieldError {
  std::string message;
  std::string field = {};
};

// The first thing wrong with the Messages body `body`, with the field named;
// `needs_max_tokens`: /v1/messages (count_tokens does without it).
std::optional<FieldError> check_messages_body(simdjson::dom::object body, bool needs_max_tokens);

}  // namespace switchyard::openai
