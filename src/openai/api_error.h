// API errors: the one place where a failure becomes an HTTP status and a
// body, OpenAI's {"error":{"message","type","param","code"}} or, on the
// Anthropic routes, {"type":"error","error":{"type","message"}}.
#pragma once

#include <string>

#include "http/message.h"

namespace switchyard::openai {

struct ApiError {
  int status = 500;
  std::string message;  // one line naming what was wrong
  std::string type;     // invalid_request_error, authentication_error, ...
  std::string param;    // the offending field, or empty
  std::string code;     // a stable machine-readable code, or empty
  int retry_after = 1;  // seconds, sent as Retry-After with a 429 or 503

  static ApiError bad_request(std::string message, std::string param = {});
  static ApiError unauthorized(std::string message);
  static ApiError forbidden(std::string message);
  static ApiError not_found(std::string message, std::string code = {});
  static ApiError method_not_allowed(std::string message);
  static ApiError too_large(std::string message);
  static ApiError rate_limited(std::string message, std::string code = "queue_full");
  static ApiError unavailable(std::string message, std::string code = {});
  static ApiError bad_gateway(std::string message);
  // The error event that ends a stream whose engine failed mid-way.
  static ApiError upstream_failed(std::string message);
  static ApiError internal(std::string message);
};

// Which API's error shapes a route speaks. The Responses API's errors are
// OpenAI's; a stream of its events ends with its own failure events.
enum class Dialect { openai, anthropic, responses };

// The JSON body alone.
std::string error_body(const ApiError& error, Dialect dialect = Dialect::openai);
// A complete response; 429s and 503s carry Retry-After.
http::Response error_response(const ApiError& error, Dialect dialect = Dialect::openai);
// The events that end a stream which failed after it started: OpenAI's
// error chunk and [DONE], Anthropic's `event: error`, or the Responses API's
// `error` and `response.failed` events.
std::string stream_error_events(const ApiError& error, Dialect dialect);

}  // namespace switchyard::openai
