// OpenAI's Responses API (POST /v1/responses) as llama-server serves it: the
// request converted at the edge into a chat completion (its
// server_chat_convert_responses_to_chatcmpl), the answer in its
// to_json_oaicompat_resp* shapes, member for member and in its order
// (tools/server/server-task.cpp). llama-server keeps no responses: a
// `previous_response_id` is refused with its 400. vLLM serves the same
// events numbered, and keeps responses when started with
// VLLM_ENABLE_RESPONSES_API_STORE=1 (sim/response_store.h).
#pragma once

#include <boost/json/object.hpp>

#include <functional>
#include <memory>
#include <string>
#include <variant>

#include "http/message.h"
#include "sim/completion.h"

namespace switchyard::sim::responses {

// The chat completion a Responses request stands for (`previous_response_id`
// refused unless the engine `keeps_responses`): `instructions`
// becomes the system message; `input` a string (one user message) or items
// (messages with string content or input_text/output_text parts, and
// function_call_output items as `tool` messages); `max_output_tokens`
// becomes max_tokens; stream, temperature, top_p and model pass through.
std::variant<boost::json::object, RequestError> to_chat_request(const boost::json::object& body,
                                                                bool keeps_responses = false);

// Reads a Responses request into a job of Endpoint::responses.
std::variant<CompletionJob, RequestError> parse_responses(const boost::json::object& body,
                                                          const Tokenizer& tokenizer,
                                                          const std::string& model,
                                                          bool keeps_responses = false);

using JsonReply = http::Response (*)(int status, const boost::json::value& body);

// Where engines differ: llama-server adds its `timings` to
// response.completed; vLLM numbers every event (`sequence_number`) and,
// keeping responses, is handed each finished one by `keep`.
struct Shape {
  JsonReply json_reply;
  bool timings = true;
  bool sequence_numbers = false;
  std::function<void(const boost::json::object& response, const CompletionResult&)> keep;
};

// The wire format of one job: a `response` object, or `event: NAME\ndata:
// {...}\n\n` events (response.created, response.in_progress,
// response.output_item.added, response.content_part.added,
// response.output_text.delta..., response.output_text.done,
// response.content_part.done, response.output_item.done,
// response.completed with usage; no [DONE]). `stream_headers` are the
// engine's SSE headers.
std::unique_ptr<CompletionFormat> make_format(const CompletionJob& job, std::string id,
                                              std::int64_t created, http::Headers stream_headers,
                                              Shape shape);

}  // namespace switchyard::sim::responses
