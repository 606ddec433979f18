// llama-server's bodies, chunks and headers, key for key and in the same key
// order as the captures in shared/reference/llamacpp/: the completion
// formats of its three completion endpoints, its error shape, and the
// sampling parameters it echoes.
#pragma once

#include <boost/json/object.hpp>

#include <memory>
#include <string>

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

// The wire format of one completion request on `job.endpoint`. `id` is the
// response id, `created` its Unix time.
std::unique_ptr<CompletionFormat> make_format(const CompletionJob& job, std::string id,
                                              std::int64_t created);

}  // namespace switchyard::sim::llamacpp
