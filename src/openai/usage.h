// Token usage as engines report it in OpenAI responses.
#pragma once

#include <optional>
#include <string_view>

namespace switchyard::openai {

struct Usage {
  long prompt_tokens = 0;
  long completion_tokens = 0;
  long cached_tokens = 0;  // usage.prompt_tokens_details.cached_tokens
};

// The top-level `usage` object of a response body or stream chunk, if any.
std::optional<Usage> find_usage(std::string_view json);

}  // namespace switchyard::openai
