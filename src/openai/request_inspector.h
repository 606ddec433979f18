// What the gateway needs to know of a request body, found without building a
// DOM of a possibly 300 KB agent prompt, and the one place that rewrites the
// body for an engine (model name, forced usage reporting) byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace switchyard::openai {

// Which API the body is for: decides the required fields.
enum class Endpoint {
  chat_completions,        // POST /v1/chat/completions
  completions,             // POST /v1/completions
  embeddings,              // POST /v1/embeddings
  tokenize,                // POST /tokenize (llama.cpp)
  detokenize,              // POST /detokenize
  native_completion,       // POST /completion (llama.cpp's own API)
  infill,                  // POST /infill
  apply_template,          // POST /apply-template
  embedding,               // POST /embedding (llama.cpp's own API)
  rerank,                  // POST /v1/rerank, /reranking
  messages,                // POST /v1/messages (Anthropic)
  count_tokens,            // POST /v1/messages/count_tokens (Anthropic)
  responses,               // POST /v1/responses (OpenAI's Responses API)
  responses_input_tokens,  // POST /v1/responses/input_tokens
  chat_input_tokens,       // POST /v1/chat/completions/input_tokens
  stored_response,         // GET, DELETE /v1/responses/{id}, POST .../cancel: no body to read
  audio,                   // POST /v1/audio/transcriptions, /translations: a multipart form
  engine_state,            // GET /props?model=, /slots?model= (llama.cpp's router): no body
};

// Whether a request to `endpoint` runs on an engine slot (generation,
// embeddings) rather than beside it (tokenizer and template calls).
bool takes_slot(Endpoint endpoint);

// A byte span of the body: [offset, offset + length); length 0 when absent.
struct Span {
  std::size_t offset = 0;
  std::size_t length = 0;
};

struct RequestFacts {
  std::string model;  // empty when absent
  Span model_token;   // the model's JSON string token, quotes included (form: its plain value)
  bool form = false;  // the body is a multipart form (openai/multipart_form.h), not JSON
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  Span stream_options;         // the value of stream_options, when present
  Span include_usage_value;    // the value of stream_options.include_usage, when present
  // The prompt as sent: the value of "messages", "prompt" or the Responses
  // API's "input" (where a routing policy finds shared prefixes).
  Span prompt;
  // What identifies a conversation across its turns (an agent re-sends it
  // every turn): a hash of the system prompt (the Responses API's
  // `instructions`) and the messages (input items) up to the first user
  // message. 0 when the body has no messages.
  std::uint64_t conversation = 0;
  // The output asked for: max_tokens (the Responses API's
  // max_output_tokens), else max_completion_tokens, else n_predict
  // (llama.cpp), the first given as a whole number >= 0.
  std::optional<std::int64_t> max_tokens;
  // The Responses API's previous_response_id: the stored response this one
  // continues; empty when none.
  std::string previous_response_id;
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
  // The field the last refused body's error is about (its 400's `param`),
  // or empty: the body as a whole.
  const std::string& refused_field() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The body as an engine should get it: the model value replaced by `model`
// (when the body names one), and with `force_usage` the stream asked to end
// with a usage chunk (stream_options.include_usage = true); the rest byte for
// byte.
std::string rewrite_request(std::string_view body, const RequestFacts& facts,
                            std::string_view model, bool force_usage);

// Whether rewrite_request() would change anything.
bool needs_rewrite(const RequestFacts& facts, std::string_view model, bool force_usage);

}  // namespace switchyard::openai
