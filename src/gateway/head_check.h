// One check on a request's head, before its body is read
// (gateway/head_checks.h lists them in order).
#pragma once

#include <optional>

#include "gateway/routes.h"
#include "http/message.h"

namespace switchyard::gateway {

class HeadCheck {
 public:
  virtual ~HeadCheck() = default;
  // The refusal, or nullopt to let the next check look.
  virtual std::optional<http::Response> check(http::RequestHead& head, const Route& route) = 0;
};

}  // namespace switchyard::gateway
