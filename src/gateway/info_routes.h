// The routes the gateway answers itself: models, one model, health, and the
// root that clients probe.
#pragma once

#include <boost/json/object.hpp>

#include <string_view>
#include <vector>

#include "gateway/model_catalog.h"
#include "gateway/router.h"
#include "http/message.h"
#include "obs/status.h"
#include "profiles/model_residency.h"

namespace switchyard::gateway {

// GET /v1/models: the models (and aliases) with a routable instance, or with
// on-demand models (`states` not empty) every configured model; each with
// llama.cpp router mode's `status` ({"value": loaded|loading|unloaded|
// sleeping, "args": [], and "failed": true, "exit_code" after a failed load}).
http::Response models_response(const ModelCatalog& catalog, const InstanceTable& instances,
                               const std::vector<profiles::ModelState>& states = {});
// GET /v1/models/{id}: one of them, or 404 model_not_found.
http::Response model_response(std::string_view id, const ModelCatalog& catalog,
                              const InstanceTable& instances,
                              const std::vector<profiles::ModelState>& states = {});
// One model's `status` as /v1/models shows it.
boost::json::object status_object(const profiles::ModelState& state);
// GET /health: 200 while some instance is routable or on-demand (loaded
// when a request needs it), else 503; each
// instance's state only with `detail`.
http::Response health_response(const obs::StatusSnapshot& status, bool detail);
// GET /props: llama.cpp router mode's own props (role "router"), by which
// its web UI knows to list the models and ask /props?model=NAME for each;
// `instances` is how many engines may run at once.
http::Response router_props_response(std::size_t instances);
// GET and HEAD /: 200 (agents probe the base URL before their first
// request) with where things are; no body for HEAD.
http::Response root_response(bool head);

}  // namespace switchyard::gateway
