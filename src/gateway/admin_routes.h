// The admin API (docs/profiles.md has the JSON shapes, which the dashboard
// reads and which stay stable):
//   GET  /admin/status                   profiles, active, state, since, last switch, queues
//   GET  /admin/keys                     the keys, their limits, usage today (keys_routes.h)
//   POST /admin/profile {"profile": P}   a manual switch; answers once P is active, or why not
//   POST /admin/instances/{name}/drain   admin state draining (finishes its requests)
//   POST /admin/instances/{name}/enable  admin state active again
//   POST /models/load {"model": M}       load an on-demand model (docs/models.md)
//   POST /models/unload {"model": M}     unload it (its requests finish first)
// Access is checked before the body is read (gateway/admin_access.h).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/json/object.hpp>

#include <functional>
#include <string>

#include "fleet/fleet.h"
#include "gateway/model_control.h"
#include "gateway/profile_control.h"
#include "http/message.h"
#include "obs/status.h"

namespace switchyard::gateway {

struct AdminView {
  fleet::Fleet& fleet;
  ProfileControl* profiles;  // null without profiles
  ModelControl* models;      // null without on-demand instances
  bool draining;             // shutting down
  // The snapshot the status is built from (the one /health and /metrics read).
  std::function<obs::StatusSnapshot()> snapshot;
  // GET /admin/keys's body (gateway/keys_routes.h).
  std::function<std::string()> keys;
};

boost::asio::awaitable<http::Response> admin_response(AdminView view, const http::Request& request);

// The profiles part of /admin/status (active, state, target, since, mode,
// last_switch, decisions, profiles), which the dashboard shows too.
boost::json::object profiles_json(ProfileControl& control);

// GET /admin/status's body.
std::string admin_status_json(const AdminView& view);

}  // namespace switchyard::gateway
