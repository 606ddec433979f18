#include "gateway/head_checks.h"

#include <fmt/format.h>

#include "openai/api_error.h"

namespace switchyard::gateway {

using openai::ApiError;

std::optional<http::Response> MethodCheck::check(http::RequestHead& head, const Route& route) {
  if (route.allows(head.method)) return std::nullopt;
  http::Response refusal =
      openai::error_response(ApiError::method_not_allowed(fmt::format(
                                 "{} takes {}, not {}", route.path, route.method, head.method)),
                             route.dialect);
  refusal.headers.add("Allow", std::string(route.method));
  return refusal;
}

std::optional<http::Response> KeyCheck::check(http::RequestHead& head, const Route& route) {
  if (route.door != Door::api_key || !keys_.enabled()) return std::nullopt;
  const KeyEntry* key = keys_.find(head.headers);
  head.screen_note = keys_.note(key);
  if (key) return std::nullopt;
  return openai::error_response(
      ApiError::unauthorized(ApiKeys::presented(head.headers)
                                 ? "the API key is not valid"
                                 : "an API key is required: send 'Authorization: Bearer <key>' "
                                   "or 'x-api-key: <key>'"),
      route.dialect);
}

std::optional<http::Response> HeadChecks::run(http::RequestHead& head, const Route& route) {
  for (HeadCheck* c : checks_)
    if (auto refusal = c->check(head, route)) return refusal;
  return std::nullopt;
}

}  // namespace switchyard::gateway
