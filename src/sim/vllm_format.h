// vLLM's OpenAI-server bodies, chunks and errors, after its pydantic models in
// vllm/entrypoints/openai/protocol.py (ErrorResponse/ErrorInfo, ModelCard,
// UsageInfo, ChatCompletionResponse, CompletionResponse and their stream
// variants) and serving_engine.py's create_error_response().
#pragma once

#include <boost/json/object.hpp>

#include <functional>
#include <memory>
#include <string>

#include "http/message.h"
#include "sim/completion.h"

namespace switchyard::sim::vllm {

http::Response json_reply(int status, const boost::json::value& body);
// {"error":{"message","type","param","code"}}; `type` is vLLM's exception
// name ("BadRequestError", "NotFoundError", ...), `code` the HTTP status.
http::Response error_reply(int status, std::string_view message, std::string_view type,
                           std::string_view param = {});

// The wire format of one chat or text completion or response (`id`
// without its prefix); a finished response is handed to `keep` when set.
std::unique_ptr<CompletionFormat> make_format(
    const CompletionJob& job, std::string id, std::int64_t created,
    std::function<void(const boost::json::object&, const CompletionResult&)> keep = {});

}  // namespace switchyard::sim::vllm
