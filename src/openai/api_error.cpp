#include "openai/api_error.h"

#include "common/json_text.h"

namespace switchyard::openai {

ApiError ApiError::bad_request(std::string message, std::string param) {
  return {400, std::move(message), "invalid_request_error", std::move(param), {}};
}
ApiError ApiError::unauthorized(std::string message) {
  return {401, std::move(message), "authentication_error", {}, "invalid_api_key"};
}
ApiError ApiError::forbidden(std::string message) {
  return {403, std::move(message), "permission_error", {}, "forbidden"};
}
ApiError ApiError::not_found(std::string message, std::string code) {
  return {404, std::move(message), "invalid_request_error", {}, std::move(code)};
}
ApiError ApiError::method_not_allowed(std::string message) {
  return {405, std::move(message), "invalid_request_error", {}, "method_not_allowed"};
}
ApiError ApiError::too_large(std::string message) {
  return {413, std::move(message), "invalid_request_error", {}, "request_too_large"};
}
ApiError ApiError::rate_limited(std::string message, std::string code) {
  return {429, std::move(message), "rate_limit_error", {}, std::move(code)};
}
ApiError ApiError::unavailable(std::string message, std::string code) {
  return {503, std::move(message), "server_error", {}, std::move(code)};
}
ApiError ApiError::bad_gateway(std::string message) {
  return {502, std::move(message), "upstream_error", {}, "bad_gateway"};
}
ApiError ApiError::upstream_failed(std::string message) {
  return {502, std::move(message), "upstream_error", {}, "upstream_failed"};
}
ApiError ApiError::internal(std::string message) {
  return {500, std::move(message), "server_error", {}, {}};
}

namespace {

// Anthropic's error types, by status (docs.anthropic.com, "Errors").
const char* anthropic_type(int status) {
  switch (status) {
    case 400:
    case 405:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    default:
      return "api_error";
  }
}

}  // namespace

std::string error_body(const ApiError& e, Dialect dialect) {
  if (dialect == Dialect::anthropic)
    return std::string(R"({"type":"error","error":{"type":)") +
           json_quote(anthropic_type(e.status)) + ",\"message\":" + json_quote(e.message) + "}}";
  const auto opt = [](const std::string& s) {
    return s.empty() ? std::string("null") : json_quote(s);
  };
  return "{\"error\":{\"message\":" + json_quote(e.message) + ",\"type\":" + json_quote(e.type) +
         ",\"param\":" + opt(e.param) + ",\"code\":" + opt(e.code) + "}}";
}

http::Response error_response(const ApiError& e, Dialect dialect) {
  http::Response r = http::json_response(e.status, error_body(e, dialect));
  if (e.status == 503 || e.status == 429)
    r.headers.add("Retry-After", std::to_string(e.retry_after));
  return r;
}

std::string stream_error_events(const ApiError& e, Dialect dialect) {
  if (dialect == Dialect::anthropic)
    return "event: error\ndata: " + error_body(e, dialect) + "\n\n";
  if (dialect == Dialect::responses) {
    const std::string code = json_quote(e.code.empty() ? e.type : e.code);
    const std::string message = json_quote(e.message);
    return "event: error\ndata: {\"type\":\"error\",\"code\":" + code + ",\"message\":" + message +
           ",\"param\":null}\n\nevent: response.failed\ndata: {\"type\":\"response.failed\","
           "\"response\":{\"object\":\"response\",\"status\":\"failed\",\"error\":{\"code\":" +
           code + ",\"message\":" + message + "}}}\n\n";
  }
  return "data: " + error_body(e, dialect) + "\n\ndata: [DONE]\n\n";
}

}  // namespace switchyard::openai
