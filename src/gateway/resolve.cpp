#include "gateway/resolve.h"

#include <fmt/format.h>

#include "gateway/session_id.h"
#include "http/message.h"
#include "openai/multipart_form.h"

namespace switchyard::gateway {

using openai::ApiError;

std::optional<ApiError> Resolve::inspect(RequestContext& ctx) {
  // The route matched on the query naming the model (gateway/routes.h).
  if (*ctx.route.endpoint == openai::Endpoint::engine_state) {
    ctx.facts.model = http::query_param(ctx.request.head.target, "model").value_or("");
    return std::nullopt;
  }
  if (*ctx.route.endpoint == openai::Endpoint::audio) {
    auto form = openai::inspect_audio_form(
        ctx.request.body, ctx.request.head.headers.find("content-type").value_or(""));
    if (auto* refused = std::get_if<ApiError>(&form)) return std::move(*refused);
    ctx.facts = std::move(std::get<openai::AudioForm>(form).facts);
    return std::nullopt;
  }
  auto facts = inspector_.inspect(ctx.request.body, *ctx.route.endpoint);
  if (!facts) return ApiError::bad_request(facts.error().message, inspector_.refused_field());
  ctx.facts = std::move(*facts);
  return std::nullopt;
}

Stage::Decision Resolve::check(RequestContext& ctx) {
  // A stored response's routes have no body: the stored-responses stage
  // knows its model.
  if (*ctx.route.endpoint == openai::Endpoint::stored_response) return {};
  if (auto refused = inspect(ctx)) return Decision::answer(std::move(*refused));
  std::optional<std::string> model;
  if (ctx.facts.model.empty()) {
    // As llama-server does, a body without a model is served (by the
    // default model) when there is no doubt which one is meant.
    model = catalog_.default_model();
    if (!model)
      return Decision::answer(ApiError::bad_request(
          fmt::format("'model' is required (there is no 'default' alias); served models: {}",
                      catalog_.describe()),
          "model"));
    ctx.client_model = *model;
  } else {
    model = catalog_.resolve(ctx.facts.model);
    if (!model)
      return Decision::answer(
          ApiError::not_found(fmt::format("the model '{}' does not exist; served models: {}",
                                          ctx.facts.model, catalog_.describe()),
                              "model_not_found"));
    ctx.client_model = ctx.facts.model;
  }
  ctx.model = std::move(*model);
  ctx.record.model = ctx.model;
  auto session =
      session_id(ctx.request.head.headers, ctx.key_name, ctx.model, ctx.facts.conversation);
  if (!session)
    return Decision::answer(ApiError::bad_request(session.error().message, "X-Session-Id"));
  ctx.session = std::move(*session);
  return {};
}

}  // namespace switchyard::gateway
