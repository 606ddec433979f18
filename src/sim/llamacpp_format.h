// llama-server's bodies, chunks and headers, key for key and in the same key
// order as the captures in shared/reference/llamacpp/: the completion
// formats of its three completion endpoints, its error shape, and the
// sampling parameters it echoes.
#pragma once

#include <boost/json/object.hpp>

#include <memory>
#include <string>
#include <variant>

#include "http/message.h"
#include "sim/completion.h"

namespace switchyard::sim::llamacpp {

constexpr std::string_view kFingerprint = "b0-unknown";

http::Headers base_headers();
// A JSON response with llama-server's headers (errors close the connection).
http::Response json_reply(int status, const boost::json::value& body);
// {"error":{"code","message","type"}}
http::Response error_reply(int status, std::string_view message, std::string_view type);

// The default sampling parameters as /props and /slots show them.
boost::json::object default_params();
// `params` of a busy /slots entry for a request.
boost::json::object slot_params(const RequestInfo& info);

// `timings` of a response; the generation speed is multiplied by
// `over_report` (an engine that inflates its self-reported speed).
boost::json::object timings_json(const CompletionResult& r);

// POST /infill: the prompt llama-server builds from `input_prefix`,
// `input_suffix` and `prompt` around a FIM model's prefix/suffix/middle
// tokens; the request is then a /completion. Both inputs are required.
std::variant<std::string, RequestError> infill_prompt(const boost::json::object& body);

// POST /rerank, /reranking, /v1/rerank (llama-server --reranking): `query`
// against `documents` (or TEI's `texts`), best first, `top_n` of them. The
// score is the share of the query's words a document contains, so a test can
// predict the order; tokens count as llama-server's [BOS]q[EOS][SEP]d[EOS].
// Answered at once, without a slot. `model` echoes the request's, as
// llama-server's rerank does.
http::Response rerank(const boost::json::object& body, const Tokenizer& tokenizer,
                      const std::string& model_name);

// The wire format of one completion request on `job.endpoint`. `id` is the
// response id, `created` its Unix time.
std::unique_ptr<CompletionFormat> make_format(const CompletionJob& job, std::string id,
                                              std::int64_t created);

}  // namespace switchyard::sim::llamacpp
