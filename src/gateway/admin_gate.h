// The door of this gateway's admin routes (the admin API, /ui and its event
// stream): admin_access's checks with the config's admin_key, listen
// address and admin_hosts, and the dashboard's login tickets. A head check.
#pragma once

#include <optional>

#include "config/fleet_config.h"
#include "gateway/admin_access.h"
#include "gateway/head_check.h"
#include "gateway/routes.h"
#include "http/message.h"
#include "openai/api_error.h"

namespace switchyard::gateway {

class AdminGate final : public HeadCheck {
 public:
  // `config` must outlive the gate.
  explicit AdminGate(const config::FleetConfig& config) : config_(config) {}

  // For the admin and page doors: why a request may not pass (where it
  // comes from, whom it is for, who sent it), or nullopt.
  std::optional<http::Response> check(http::RequestHead& head, const Route& route) override;
  // POST /admin/login (the admin key checked by screen()): a ticket in an
  // HttpOnly cookie, which the dashboard's requests then carry.
  http::Response login();

 private:
  const config::FleetConfig& config_;
  AdminTickets tickets_;
};

}  // namespace switchyard::gateway
