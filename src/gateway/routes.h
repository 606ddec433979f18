// The gateway's route table: path → what answers it. Forwarded routes name
// the API their body speaks (the inspector's endpoint) and the dialect their
// errors take.
#pragma once

#include <optional>
#include <string_view>

#include "openai/api_error.h"
#include "openai/request_inspector.h"

namespace switchyard::gateway {

enum class RouteKind {
  proxy,    // forwarded to an instance of the body's model
  models,   // GET /v1/models
  model,    // GET /v1/models/{id}
  health,   // GET /health
  metrics,  // GET /metrics
  ui,       // GET /ui and /ui/<file>: the dashboard
  events,   // GET /admin/events: the dashboard's live status (SSE)
  admin,    // /admin/... (gateway/admin_routes.h), behind gateway/admin_access.h
  sse,      // GET /models/sse: model status events (gateway/model_control.h)
  root,     // GET and HEAD /: what clients probe before they start
};

struct Route {
  std::string_view path;    // exact, or a prefix when `prefix`
  std::string_view method;  // one, or several as an Allow header lists them ("GET, DELETE")
  RouteKind kind;
  std::optional<openai::Endpoint> endpoint;  // set for proxy routes
  bool needs_key;                            // when API keys are configured
  openai::Dialect dialect = openai::Dialect::openai;
  bool prefix = false;
  bool head_too = false;  // HEAD is answered as well, without a body

  bool allows(std::string_view m) const;
};

// The dashboard's login: the admin key once, a cookie for the rest
// (gateway/admin_access.h).
inline constexpr std::string_view admin_login_path = "/admin/login";

// The route for a request path, or null.
const Route* find_route(std::string_view path);

}  // namespace switchyard::gateway
