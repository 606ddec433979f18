// The checks a request's head passes before its body is read, in the order
// they run: the route takes the method, the admin door, the API key's door
// (gateway/routes.h names each route's door). The first refusal answers, in
// the route's dialect; the body is then never read.
#pragma once

#include <array>
#include <optional>

#include "config/fleet_config.h"
#include "gateway/admin_gate.h"
#include "gateway/api_keys.h"
#include "gateway/head_check.h"
#include "gateway/routes.h"
#include "http/message.h"

namespace switchyard::gateway {

// 405 with the Allow header when the route does not take the method.
class MethodCheck final : public HeadCheck {
 public:
  std::optional<http::Response> check(http::RequestHead& head, const Route& route) override;
};

// 401 for an API route when keys are configured and the request presents
// none of them. Leaves the key it found in the head's note, so that the
// body's authenticate stage does not hash the key again.
class KeyCheck final : public HeadCheck {
 public:
  // `keys` (the table in force) must outlive the check.
  explicit KeyCheck(const ApiKeys& keys) : keys_(keys) {}
  std::optional<http::Response> check(http::RequestHead& head, const Route& route) override;

 private:
  const ApiKeys& keys_;
};

class HeadChecks {
 public:
  // The references must outlive the checks.
  HeadChecks(const config::FleetConfig& config, const ApiKeys& keys) : admin(config), key_(keys) {}
  HeadChecks(const HeadChecks&) = delete;
  HeadChecks& operator=(const HeadChecks&) = delete;

  std::optional<http::Response> run(http::RequestHead& head, const Route& route);

  AdminGate admin;  // also the dashboard's logins

 private:
  MethodCheck method_;
  KeyCheck key_;
  std::array<HeadCheck*, 3> checks_{&method_, &admin, &key_};
};

}  // namespace switchyard::gateway
