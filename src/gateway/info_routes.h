// The routes the gateway answers itself: models, one model, health.
#pragma once

#include <string_view>

#include "gateway/model_catalog.h"
#include "gateway/router.h"
#include "http/message.h"
#include "obs/status.h"

namespace switchyard::gateway {

// GET /v1/models: the models (and aliases) with a routable instance.
http::Response models_response(const ModelCatalog& catalog, const InstanceTable& instances);
// GET /v1/models/{id}: one of them, or 404 model_not_found.
http::Response model_response(std::string_view id, const ModelCatalog& catalog,
                              const InstanceTable& instances);
// GET /health: 200 while some instance is routable, else 503; each
// instance's state only with `detail`.
http::Response health_response(const obs::StatusSnapshot& status, bool detail);

}  // namespace switchyard::gateway
