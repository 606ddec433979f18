// libFuzzer target for the string-and-nesting scan that finds a member of a
// JSON object (openai/json_scan): on any bytes, valid JSON or not, the span
// it returns lies inside the input. Also runs the request inspector on the
// same bytes for each endpoint, and checks that the body it accepts, once
// rewritten for an engine (model replaced, usage forced), is still a body it
// accepts, naming the new model and asking for usage.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "openai/json_scan.h"
#include "openai/request_inspector.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace switchyard::openai;
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  for (std::string_view key : {"model", "stream", "stream_options", "include_usage", ""}) {
    const auto text = member_text(json, key);
    if (!text) continue;
    if (text->data() < json.data() || text->data() + text->size() > json.data() + json.size())
      std::abort();
  }
  static RequestInspector inspector;
  static RequestInspector again;
  const auto inside = [&](Span span) { return span.offset + span.length <= json.size(); };
  for (Endpoint endpoint :
       {Endpoint::chat_completions, Endpoint::completions, Endpoint::embeddings, Endpoint::tokenize,
        Endpoint::detokenize, Endpoint::native_completion, Endpoint::embedding, Endpoint::rerank,
        Endpoint::messages, Endpoint::infill}) {
    const auto facts = inspector.inspect(json, endpoint);
    if (!facts) continue;
    if (!inside(facts->model_token) || !inside(facts->stream_options) ||
        !inside(facts->include_usage_value))
      std::abort();
    const std::string rewritten = rewrite_request(json, *facts, "m", true);
    const auto after = again.inspect(rewritten, endpoint);
    if (!after) std::abort();
    if (facts->model_token.length > 0 && after->model != "m") std::abort();
    if (facts->stream && !after->include_usage) std::abort();
  }
  return 0;
}
