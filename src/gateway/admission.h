// The admit stage: whether the gateway takes the request at all. Today: not
// while shutting down. Per-key limits and session seats belong here.
#pragma once

#include "gateway/pipeline.h"

namespace switchyard::gateway {

class Admit final : public Stage {
 public:
  // `draining` is the gateway's flag and must outlive the stage.
  explicit Admit(const bool& draining) : draining_(draining) {}
  boost::asio::awaitable<Verdict> run(RequestContext& ctx) override;

 private:
  const bool& draining_;
};

}  // namespace switchyard::gateway
