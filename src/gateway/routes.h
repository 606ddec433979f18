// The gateway's route table: path → what answers it. Forwarded routes name
// the API their body speaks (the inspector's endpoint) and the dialect their
// errors take; the routes the gateway answers itself name their handler
// (gateway/local_routes.h). Each row says which door it is behind.
#pragma once

#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string_view>

#include "openai/api_error.h"
#include "openai/request_inspector.h"

namespace switchyard::gateway {

class LocalRoutes;
struct RequestContext;

// A route the gateway answers itself (it answers the request, streamed or not).
using LocalHandler = boost::asio::awaitable<void> (LocalRoutes::*)(RequestContext&);

// Who may pass, checked on the head (gateway/head_checks.h).
enum class Door {
  open,     // anyone
  api_key,  // an API key, when keys are configured
  admin,    // the admin key (or a dashboard login) from an allowed host and origin
  page,     // the dashboard's page: from an allowed host; it asks for the admin key itself
};

struct Route {
  std::string_view path;    // exact, or a prefix when `prefix`
  std::string_view method;  // one, or several as an Allow header lists them ("GET, DELETE")
  Door door;
  std::optional<openai::Endpoint> endpoint = std::nullopt;  // set for forwarded routes
  LocalHandler answer = nullptr;                            // set for the others
  openai::Dialect dialect = openai::Dialect::openai;
  bool prefix = false;
  bool head_too = false;  // HEAD is answered as well, without a body
  // The row matches only when the query names a model (?model=): llama.cpp
  // router mode's GET /props?model=NAME goes to that model's engine, while
  // GET /props is the router's own (the next row with the path).
  bool model_in_query = false;

  bool forwarded() const { return endpoint.has_value(); }
  bool allows(std::string_view m) const;
};

// The dashboard's login: the admin key once, a cookie for the rest
// (gateway/admin_access.h).
inline constexpr std::string_view admin_login_path = "/admin/login";

// The route for a request target (path and query), or null.
const Route* find_route(std::string_view target);

}  // namespace switchyard::gateway
