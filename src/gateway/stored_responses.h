// The stored-responses stage: a request that refers to a response an
// instance holds goes to that instance. A Responses API request with
// `previous_response_id` continues the conversation there (and in its agent
// session); GET and DELETE /v1/responses/{id} and POST .../cancel are
// forwarded there with the model and name the response was made with. A
// response the gateway does not know is the engine's to judge, except on
// those routes, which have nowhere else to go: 404 naming the id, as vLLM
// answers. So is one whose instance is gone (removed by a reload). On the
// way out, each response relayed is remembered (gateway/response_homes.h).
#pragma once

#include <string_view>

#include "gateway/pipeline.h"
#include "gateway/response_homes.h"
#include "gateway/router.h"

namespace switchyard::gateway {

class StoredResponses final : public Stage {
 public:
  // `instances` (the fleet's table) must outlive the stage.
  explicit StoredResponses(const InstanceTable& instances,
                           std::size_t capacity = ResponseHomes::kDefaultCapacity)
      : instances_(instances), homes_(capacity) {}

  Decision check(RequestContext& ctx) override;
  void finish(RequestContext& ctx) override;

  // The response id in a path of the stored-response route
  // (/v1/responses/{id}[/...]); empty when there is none.
  static std::string_view path_id(std::string_view path);

 private:
  // The index of the instance named `name` while it is in the config.
  std::optional<std::size_t> live_index(std::string_view name) const;

  const InstanceTable& instances_;
  ResponseHomes homes_;
};

}  // namespace switchyard::gateway
