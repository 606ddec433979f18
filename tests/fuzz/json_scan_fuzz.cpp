// libFuzzer target for the string-and-nesting scan that finds a member of a
// JSON object (openai/json_scan): on any bytes, valid JSON or not, the span
// it returns lies inside the input. Also runs the request inspector on the
// same bytes for each endpoint, and checks that a model it reports can be
// replaced in place.
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
  for (Endpoint endpoint : {Endpoint::chat_completions, Endpoint::completions, Endpoint::embeddings,
                            Endpoint::tokenize, Endpoint::detokenize}) {
    const auto facts = inspector.inspect(json, endpoint);
    if (!facts) continue;
    if (facts->model_offset + facts->model_length > json.size()) std::abort();
    if (facts->model_length > 0) {
      const auto replaced = replace_model(json, *facts, "m");
      if (replaced.size() != json.size() - facts->model_length + 3) std::abort();
    }
  }
  return 0;
}
