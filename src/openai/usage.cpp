#include "openai/usage.h"

#include <charconv>

#include "openai/json_scan.h"

namespace switchyard::openai {

namespace {

std::optional<long> integer_member(std::string_view object, std::string_view key) {
  auto text = member_text(object, key);
  if (!text) return std::nullopt;
  long n = 0;
  auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
  if (ec != std::errc() || end != text->data() + text->size()) return std::nullopt;
  return n;
}

}  // namespace

std::optional<Usage> find_usage(std::string_view json) {
  auto usage = member_text(json, "usage");
  if (!usage || !usage->starts_with('{')) return std::nullopt;
  const auto prompt = integer_member(*usage, "prompt_tokens");
  const auto completion = integer_member(*usage, "completion_tokens");
  if (!prompt && !completion) return std::nullopt;
  Usage u;
  u.prompt_tokens = prompt.value_or(0);
  u.completion_tokens = completion.value_or(0);
  if (auto details = member_text(*usage, "prompt_tokens_details");
      details && details->starts_with('{'))
    u.cached_tokens = integer_member(*details, "cached_tokens").value_or(0);
  return u;
}

}  // namespace switchyard::openai
