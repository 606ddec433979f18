// The resolve stage: checks the body (valid JSON of the route's API, fields
// of the right type; the audio routes' multipart form), finds the model it
// runs on, through the aliases, and the agent session it belongs to.
#pragma once

#include <optional>

#include "gateway/model_catalog.h"
#include "gateway/pipeline.h"
#include "openai/request_inspector.h"

namespace switchyard::gateway {

class Resolve final : public Stage {
 public:
  // `catalog` is read at each request (a reload assigns it anew) and must
  // outlive the stage.
  explicit Resolve(const ModelCatalog& catalog) : catalog_(catalog) {}
  Decision check(RequestContext& ctx) override;

 private:
  // Reads the body's facts into ctx.facts; the 400 when it is refused.
  std::optional<openai::ApiError> inspect(RequestContext& ctx);
  const ModelCatalog& catalog_;
  openai::RequestInspector inspector_;
};

}  // namespace switchyard::gateway
