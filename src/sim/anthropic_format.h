// Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens) as
// llama-server serves it: the request converted at the edge into a chat
// completion (its convert_anthropic_to_oai), the answer in its
// to_json_anthropic* shapes, key for key as the captures in
// shared/reference/llamacpp/messages_*. Errors stay in the dialect's own
// shape, as llama-server's do.
#pragma once

#include <boost/json/object.hpp>

#include <memory>
#include <string>
#include <variant>

#include "http/message.h"
#include "sim/completion.h"

namespace switchyard::sim::anthropic {

// The chat completion a Messages request stands for: `system` (a string or
// text blocks) becomes the first message; `messages` keep string content or
// their text blocks (a tool_result block becomes a `tool` message);
// `max_tokens` defaults to 4096 (llama-server is permissive);
// `stop_sequences` becomes `stop`; temperature, top_p, top_k and stream pass
// through. A body without `messages` is a 500 (llama-server throws a
// runtime_error there, which it reports as a server error).
std::variant<boost::json::object, RequestError> to_chat_request(const boost::json::object& body);

// Reads a Messages request into a job of Endpoint::messages.
std::variant<CompletionJob, RequestError> parse_messages(const boost::json::object& body,
                                                         const Tokenizer& tokenizer,
                                                         const std::string& model);

// The Messages wire format of one job: a `message` object, or a stream of
// `event: NAME\ndata: {...}\n\n` events (message_start, content_block_start,
// content_block_delta..., content_block_stop, message_delta, message_stop; no
// [DONE]). `stream_headers` are the dialect's SSE headers; `json_reply`
// makes its JSON responses.
using JsonReply = http::Response (*)(int status, const boost::json::value& body);
std::unique_ptr<CompletionFormat> make_format(const CompletionJob& job, std::string id,
                                              http::Headers stream_headers, JsonReply json_reply);

}  // namespace switchyard::sim::anthropic
