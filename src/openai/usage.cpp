#include "openai/usage.h"

#include <simdjson.h>

namespace switchyard::openai {

std::optional<Usage> find_usage(std::string_view json) {
  if (json.find("\"usage\"") == std::string_view::npos) return std::nullopt;  // the common case
  // A parser owns sizeable buffers: one per thread, reused, not one per call.
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(json.data(), json.size()).get(root)) return std::nullopt;
  simdjson::dom::object usage;
  if (root["usage"].get_object().get(usage)) return std::nullopt;
  Usage u;
  int64_t v = 0;
  if (!usage["prompt_tokens"].get_int64().get(v)) u.prompt_tokens = v;
  if (!usage["completion_tokens"].get_int64().get(v)) u.completion_tokens = v;
  if (!usage.at_pointer("/prompt_tokens_details/cached_tokens").get_int64().get(v))
    u.cached_tokens = v;
  return u;
}

}  // namespace switchyard::openai
