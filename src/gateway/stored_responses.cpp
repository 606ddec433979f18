#include "gateway/stored_responses.h"

#include <fmt/format.h>

namespace switchyard::gateway {

using openai::ApiError;
using openai::Endpoint;

namespace {

constexpr std::string_view kPrefix = "/v1/responses/";

// vLLM's answer for a response it does not hold (serving_responses.py's
// _make_not_found_error).
ApiError not_found(std::string_view id) {
  return ApiError{404, fmt::format("Response with id '{}' not found.", id), "invalid_request_error",
                  "response_id", "response_not_found"};
}

}  // namespace

std::string_view StoredResponses::path_id(std::string_view path) {
  if (!path.starts_with(kPrefix)) return {};
  const std::string_view rest = path.substr(kPrefix.size());
  return rest.substr(0, rest.find('/'));
}

std::optional<std::size_t> StoredResponses::live_index(std::string_view name) const {
  for (const auto& inst : instances_)
    if (inst->name() == name && inst->state != fleet::InstanceState::removed &&
        !inst->causes.has(fleet::AdminCause::reload_removing))
      return inst->index;
  return std::nullopt;
}

Stage::Decision StoredResponses::check(RequestContext& ctx) {
  const bool stored_route = *ctx.route.endpoint == Endpoint::stored_response;
  const std::string_view id =
      stored_route ? path_id(ctx.request.head.path()) : ctx.facts.previous_response_id;
  if (id.empty() && !stored_route) return {};
  const ResponseHome* home = homes_.find(id, ctx.key_name);
  // An id the gateway never relayed: the engine says what it knows of it.
  if (!home && !stored_route) return {};
  const auto index = home ? live_index(home->instance) : std::nullopt;
  if (!index) return Decision::answer(not_found(id));
  ctx.home = index;
  if (stored_route) {
    ctx.model = home->model;
    ctx.client_model = home->client_model;
    ctx.record.model = ctx.model;
  }
  // A conversation continued by previous_response_id is one session.
  if (!home->session.empty() && !ctx.request.head.headers.find("x-session-id"))
    ctx.session = home->session;
  return {};
}

void StoredResponses::finish(RequestContext& ctx) {
  if (ctx.response_id.empty() || !ctx.target || *ctx.route.endpoint != Endpoint::responses) return;
  homes_.remember(ctx.response_id, ResponseHome{instances_[*ctx.target]->name(), ctx.model,
                                                ctx.client_model, ctx.key_name, ctx.session});
}

}  // namespace switchyard::gateway
