// Which agent session a request belongs to. Sticky routing keeps a session on
// the instance that holds its KV cache; per-key limits count active sessions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"
#include "http/message.h"

namespace switchyard::gateway {

// The client's X-Session-Id when it sends one; else, for a body with a
// conversation (openai::RequestFacts::conversation), an id derived from the
// key's name, the model and that conversation, which an agent re-sends every
// turn; else empty (no session). An X-Session-Id that is empty, longer than
// 128 bytes or not printable ASCII is an error naming the header.
Result<std::string> session_id(const http::Headers& headers, std::string_view key_name,
                               std::string_view model, std::uint64_t conversation);

}  // namespace switchyard::gateway
