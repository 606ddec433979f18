// Token usage as engines report it: OpenAI's `usage`, Anthropic's (also
// inside message_start's `message`), and llama.cpp's native /completion.
#pragma once

#include <optional>
#include <string_view>

namespace switchyard::openai {

struct Usage {
  long prompt_tokens = 0;
  long completion_tokens = 0;
  long cached_tokens = 0;  // prompt_tokens_details.cached_tokens, cache_read_input_tokens

  // A stream reports usage in pieces (Anthropic: input tokens at the start,
  // output tokens at the end); each count only grows.
  void merge(const Usage& later);
};

// The usage a response body or one stream event's JSON reports, if any:
// a top-level `usage` object with prompt_tokens/completion_tokens or
// input_tokens/output_tokens (with input_tokens_details: the Responses
// API's); `message.usage` (Anthropic message_start); `response.usage` (the
// Responses API's response.completed); or tokens_evaluated/tokens_predicted
// (llama.cpp /completion).
std::optional<Usage> find_usage(std::string_view json);

// find_usage() of a `usage` object's text alone.
std::optional<Usage> parse_usage_object(std::string_view usage);

}  // namespace switchyard::openai
