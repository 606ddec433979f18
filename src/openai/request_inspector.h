// What the gateway needs to know of an OpenAI request body, found without
// building a DOM of a possibly 300 KB agent prompt, and the in-place rewrite
// of its `model` value.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"

namespace switchyard::openai {

// Which API the body is for: decides the required fields.
enum class Endpoint { chat_completions, completions, embeddings, tokenize, detokenize };

struct RequestFacts {
  std::string model;  // empty when absent
  // Byte span of the model's JSON string token (quotes included) in the body;
  // length 0 when there is no model field.
  std::size_t model_offset = 0;
  std::size_t model_length = 0;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

// Validates the body (well-formed UTF-8 JSON object, required fields present,
// known fields of the right type) and extracts its facts. An error names the
// field and is answered as a 400.
class RequestInspector {
 public:
  RequestInspector();
  ~RequestInspector();
  RequestInspector(const RequestInspector&) = delete;
  RequestInspector& operator=(const RequestInspector&) = delete;

  // Reuses internal buffers across calls; not thread-safe.
  Result<RequestFacts> inspect(std::string_view body, Endpoint endpoint);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The body with the model value replaced by `model`, the rest byte for byte.
std::string replace_model(std::string_view body, const RequestFacts& facts, std::string_view model);

}  // namespace switchyard::openai
