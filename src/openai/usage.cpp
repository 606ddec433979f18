#include "openai/usage.h"

#include <algorithm>
#include <array>
#include <charconv>

#include "openai/json_scan.h"

namespace switchyard::openai {

namespace {

std::optional<long> integer_text(std::optional<std::string_view> text) {
  if (!text) return std::nullopt;
  long n = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
  if (ec != std::errc() || end != text->data() + text->size()) return std::nullopt;
  return n;
}

}  // namespace

void Usage::merge(const Usage& later) {
  prompt_tokens = std::max(prompt_tokens, later.prompt_tokens);
  completion_tokens = std::max(completion_tokens, later.completion_tokens);
  cached_tokens = std::max(cached_tokens, later.cached_tokens);
}

std::optional<Usage> parse_usage_object(std::string_view usage) {
  if (!usage.starts_with('{')) return std::nullopt;
  static constexpr std::array<std::string_view, 7> keys{
      "prompt_tokens", "completion_tokens",       "prompt_tokens_details", "input_tokens",
      "output_tokens", "cache_read_input_tokens", "input_tokens_details"};
  std::array<std::optional<std::string_view>, keys.size()> v;
  member_texts(usage, keys, v);
  Usage u;
  if (integer_text(v[0]) || integer_text(v[1])) {  // OpenAI: prompt_tokens counts cached tokens too
    u.prompt_tokens = integer_text(v[0]).value_or(0);
    u.completion_tokens = integer_text(v[1]).value_or(0);
    if (v[2] && v[2]->starts_with('{'))
      u.cached_tokens = integer_text(member_text(*v[2], "cached_tokens")).value_or(0);
    return u;
  }
  if (!integer_text(v[3]) && !integer_text(v[4])) return std::nullopt;
  u.completion_tokens = integer_text(v[4]).value_or(0);
  if (v[6] && v[6]->starts_with('{')) {  // the Responses API: input_tokens counts cached ones too
    u.prompt_tokens = integer_text(v[3]).value_or(0);
    u.cached_tokens = integer_text(member_text(*v[6], "cached_tokens")).value_or(0);
    return u;
  }
  // Anthropic: input_tokens excludes what was read from the cache.
  u.cached_tokens = integer_text(v[5]).value_or(0);
  u.prompt_tokens = integer_text(v[3]).value_or(0) + u.cached_tokens;
  return u;
}

std::optional<Usage> find_usage(std::string_view json) {
  // Engines write `usage` last: found from the end, past none of the text.
  if (auto usage = last_member_text(json, "usage")) return parse_usage_object(*usage);
  // The OpenAI shape elsewhere, alone: a scan for one key stops where it is found.
  if (auto usage = member_text(json, "usage")) return parse_usage_object(*usage);
  static constexpr std::array<std::string_view, 4> keys{"message", "response", "tokens_evaluated",
                                                        "tokens_predicted"};
  std::array<std::optional<std::string_view>, keys.size()> v;
  member_texts(json, keys, v);
  for (const auto& wrapper : {v[0], v[1]}) {
    if (wrapper && wrapper->starts_with('{')) {
      // `usage` comes last in llama.cpp's response object, not in every engine's.
      auto inner = last_member_text(*wrapper, "usage");
      if (!inner) inner = member_text(*wrapper, "usage");
      if (inner) return parse_usage_object(*inner);
    }
  }
  const auto evaluated = integer_text(v[2]);
  const auto predicted = integer_text(v[3]);
  if (!evaluated && !predicted) return std::nullopt;
  return Usage{evaluated.value_or(0), predicted.value_or(0), 0};
}

}  // namespace switchyard::openai
