#include "gateway/routes.h"

#include "gateway/local_routes.h"
#include "http/message.h"

namespace switchyard::gateway {

namespace {

using openai::Dialect;
using openai::Endpoint;

// An API route: forwarded to an instance of the body's model.
constexpr Route api(std::string_view path, Endpoint endpoint, Dialect dialect = Dialect::openai) {
  return {.path = path,
          .method = "POST",
          .door = Door::api_key,
          .endpoint = endpoint,
          .dialect = dialect};
}

// A GET forwarded to an engine of the model its query names (?model=); no
// body. `only_with_model`: without one, the next row with the path answers.
constexpr Route engine_get(std::string_view path, bool only_with_model = false) {
  return {.path = path,
          .method = "GET",
          .door = Door::api_key,
          .endpoint = Endpoint::engine_state,
          .model_in_query = only_with_model};
}

// A route the gateway answers itself.
constexpr Route local(std::string_view path, std::string_view method, Door door,
                      LocalHandler answer) {
  return {.path = path, .method = method, .door = door, .answer = answer};
}

// The same for every path under `route.path`.
constexpr Route under(Route route) {
  route.prefix = true;
  return route;
}

// llama.cpp's server answers its own paths and the OpenAI ones; the
// Anthropic Messages API is served by llama-server and vLLM alike.
constexpr Route kRoutes[] = {
    api("/v1/chat/completions", Endpoint::chat_completions),
    api("/v1/completions", Endpoint::completions),
    api("/v1/embeddings", Endpoint::embeddings),
    api("/v1/messages", Endpoint::messages, Dialect::anthropic),
    api("/v1/messages/count_tokens", Endpoint::count_tokens, Dialect::anthropic),
    api("/v1/responses", Endpoint::responses, Dialect::responses),
    api("/responses", Endpoint::responses, Dialect::responses),
    api("/v1/responses/input_tokens", Endpoint::responses_input_tokens),
    api("/responses/input_tokens", Endpoint::responses_input_tokens),
    api("/v1/chat/completions/input_tokens", Endpoint::chat_input_tokens),
    // A stored response (vLLM's retrieve and cancel; DELETE as OpenAI's API
    // has it): forwarded to the instance that made it (gateway/stored_responses.h).
    {.path = "/v1/responses/",
     .method = "GET, DELETE, POST",
     .door = Door::api_key,
     .endpoint = Endpoint::stored_response,
     .prefix = true},
    api("/v1/audio/transcriptions", Endpoint::audio),
    api("/v1/audio/translations", Endpoint::audio),
    api("/v1/rerank", Endpoint::rerank),
    api("/completion", Endpoint::native_completion),
    api("/infill", Endpoint::infill),
    api("/embedding", Endpoint::embedding),
    api("/reranking", Endpoint::rerank),
    api("/rerank", Endpoint::rerank),
    api("/apply-template", Endpoint::apply_template),
    api("/tokenize", Endpoint::tokenize),
    api("/detokenize", Endpoint::detokenize),
    // An engine's own state, as llama.cpp's router hands it on (its web UI
    // reads a model's modalities and context from /props?model=NAME).
    engine_get("/props", /*only_with_model=*/true),
    engine_get("/slots"),
    local("/props", "GET", Door::api_key, &LocalRoutes::router_props),
    local("/v1/models", "GET", Door::api_key, &LocalRoutes::models),
    under(local("/v1/models/", "GET", Door::api_key, &LocalRoutes::model)),
    // llama.cpp router mode's model routes (docs/models.md); loading and
    // unloading are the operator's: the admin key opens them.
    local("/models", "GET", Door::api_key, &LocalRoutes::models),
    local("/models/sse", "GET", Door::api_key, &LocalRoutes::model_events),
    local("/models/load", "POST", Door::admin, &LocalRoutes::admin),
    local("/models/unload", "POST", Door::admin, &LocalRoutes::admin),
    {.path = "/",
     .method = "GET",
     .door = Door::open,
     .answer = &LocalRoutes::root,
     .head_too = true},
    local("/health", "GET", Door::open, &LocalRoutes::health),
    local("/metrics", "GET", Door::open, &LocalRoutes::metrics),
    // The console and the admin API.
    local("/ui", "GET", Door::page, &LocalRoutes::page),
    under(local("/ui/", "GET", Door::page, &LocalRoutes::page)),
    local("/admin/events", "GET", Door::admin, &LocalRoutes::console_events),
    local("/admin/status", "GET", Door::admin, &LocalRoutes::admin),
    local("/admin/keys", "GET", Door::admin, &LocalRoutes::admin),
    local("/admin/profile", "POST", Door::admin, &LocalRoutes::admin),
    local(admin_login_path, "POST", Door::admin, &LocalRoutes::login),
    under(local("/admin/instances/", "POST", Door::admin, &LocalRoutes::admin)),
};

}  // namespace

bool Route::allows(std::string_view m) const {
  for (std::string_view rest = method; !rest.empty();) {
    const auto comma = rest.find(", ");
    if (rest.substr(0, comma) == m) return true;
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 2);
  }
  return head_too && m == "HEAD";
}

const Route* find_route(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  for (const auto& r : kRoutes) {
    if (!(r.prefix ? path.size() > r.path.size() && path.starts_with(r.path) : path == r.path))
      continue;
    if (r.model_in_query && http::query_param(target, "model").value_or("").empty()) continue;
    return &r;
  }
  return nullptr;
}

}  // namespace switchyard::gateway
