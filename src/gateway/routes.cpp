#include "gateway/routes.h"

namespace switchyard::gateway {

namespace {

using openai::Dialect;
using openai::Endpoint;

// llama.cpp's server answers its own paths and the OpenAI ones; the
// Anthropic Messages API is served by llama-server and vLLM alike.
constexpr Route kRoutes[] = {
    {"/v1/chat/completions", "POST", RouteKind::proxy, Endpoint::chat_completions, true},
    {"/v1/completions", "POST", RouteKind::proxy, Endpoint::completions, true},
    {"/v1/embeddings", "POST", RouteKind::proxy, Endpoint::embeddings, true},
    {"/v1/messages", "POST", RouteKind::proxy, Endpoint::messages, true, Dialect::anthropic},
    {"/v1/messages/count_tokens", "POST", RouteKind::proxy, Endpoint::count_tokens, true,
     Dialect::anthropic},
    {"/v1/responses", "POST", RouteKind::proxy, Endpoint::responses, true, Dialect::responses},
    {"/responses", "POST", RouteKind::proxy, Endpoint::responses, true, Dialect::responses},
    {"/v1/responses/input_tokens", "POST", RouteKind::proxy, Endpoint::responses_input_tokens,
     true},
    {"/responses/input_tokens", "POST", RouteKind::proxy, Endpoint::responses_input_tokens, true},
    {"/v1/chat/completions/input_tokens", "POST", RouteKind::proxy, Endpoint::chat_input_tokens,
     true},
    // A stored response (vLLM's retrieve and cancel; DELETE as OpenAI's API
    // has it): forwarded to the instance that made it (gateway/stored_responses.h).
    {"/v1/responses/", "GET, DELETE, POST", RouteKind::proxy, Endpoint::stored_response, true,
     Dialect::openai, true},
    {"/v1/audio/transcriptions", "POST", RouteKind::proxy, Endpoint::audio, true},
    {"/v1/audio/translations", "POST", RouteKind::proxy, Endpoint::audio, true},
    {"/v1/rerank", "POST", RouteKind::proxy, Endpoint::rerank, true},
    {"/completion", "POST", RouteKind::proxy, Endpoint::native_completion, true},
    {"/infill", "POST", RouteKind::proxy, Endpoint::infill, true},
    {"/embedding", "POST", RouteKind::proxy, Endpoint::embedding, true},
    {"/reranking", "POST", RouteKind::proxy, Endpoint::rerank, true},
    {"/rerank", "POST", RouteKind::proxy, Endpoint::rerank, true},
    {"/apply-template", "POST", RouteKind::proxy, Endpoint::apply_template, true},
    {"/tokenize", "POST", RouteKind::proxy, Endpoint::tokenize, true},
    {"/detokenize", "POST", RouteKind::proxy, Endpoint::detokenize, true},
    {"/v1/models", "GET", RouteKind::models, std::nullopt, true},
    {"/v1/models/", "GET", RouteKind::model, std::nullopt, true, Dialect::openai, true},
    // llama.cpp router mode's model routes (docs/models.md).
    {"/models", "GET", RouteKind::models, std::nullopt, true},
    {"/models/sse", "GET", RouteKind::sse, std::nullopt, true},
    // POST /models/load|unload are admin routes: the admin key opens them.
    {"/models/load", "POST", RouteKind::admin, std::nullopt, false},
    {"/models/unload", "POST", RouteKind::admin, std::nullopt, false},
    {"/", "GET", RouteKind::root, std::nullopt, false, Dialect::openai, false, true},
    {"/health", "GET", RouteKind::health, std::nullopt, false},
    {"/metrics", "GET", RouteKind::metrics, std::nullopt, false},
    // The console: admin access is checked in Gateway::screen.
    {"/ui", "GET", RouteKind::ui, std::nullopt, false},
    {"/ui/", "GET", RouteKind::ui, std::nullopt, false, Dialect::openai, true},
    {"/admin/events", "GET", RouteKind::events, std::nullopt, false},
    // The admin key, not an API key, opens these (Gateway::screen).
    {"/admin/status", "GET", RouteKind::admin, std::nullopt, false},
    {"/admin/keys", "GET", RouteKind::admin, std::nullopt, false},
    {"/admin/profile", "POST", RouteKind::admin, std::nullopt, false},
    {admin_login_path, "POST", RouteKind::admin, std::nullopt, false},
    {"/admin/instances/", "POST", RouteKind::admin, std::nullopt, false, Dialect::openai, true},
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

const Route* find_route(std::string_view path) {
  for (const auto& r : kRoutes) {
    if (r.prefix ? path.size() > r.path.size() && path.starts_with(r.path) : path == r.path)
      return &r;
  }
  return nullptr;
}

}  // namespace switchyard::gateway
