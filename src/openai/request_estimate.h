// A request's size in tokens, estimated from its inspected facts without a
// /tokenize round trip (which would cost more than the estimate is worth):
// the prompt at about four bytes a token of its JSON text, the output as
// its max_tokens (or a synonym: RequestFacts::max_tokens) asks. Admission,
// the profile policy and the router all estimate here; only the output
// assumed when a request names none is each reader's own (admission
// reserves for the worst, the policy plans with a typical answer).
#pragma once

#include <cstddef>
#include <cstdint>

#include "openai/request_inspector.h"

namespace switchyard::openai {

inline constexpr std::size_t kBytesPerToken = 4;

inline std::int64_t prompt_tokens_estimate(std::size_t prompt_bytes) {
  return static_cast<std::int64_t>(prompt_bytes / kBytesPerToken);
}

struct TokenEstimate {
  std::int64_t prompt = 0;
  std::int64_t output = 0;
};

// `assumed_output`: the output of a request that names no limit.
inline TokenEstimate estimate_tokens(const RequestFacts& facts, std::int64_t assumed_output) {
  return {prompt_tokens_estimate(facts.prompt.length), facts.max_tokens.value_or(assumed_output)};
}

}  // namespace switchyard::openai
