#include "gateway/admin_gate.h"

namespace switchyard::gateway {

namespace {

std::optional<openai::ApiError> refusal(const http::RequestHead& head, const Route& route,
                                        const config::FleetConfig& config,
                                        const AdminTickets& tickets) {
  if (auto refused = host_refusal(head, config.listen, config.admin_hosts)) return refused;
  // The page holds no data: with an admin key anyone may load it (it asks
  // for the key).
  if (route.door == Door::page && !config.admin_key.empty()) return std::nullopt;
  if (auto refused = admin_refusal(head, config.admin_key, &tickets, AdminTickets::Clock::now()))
    return refused;
  return cross_origin_refusal(head);
}

}  // namespace

std::optional<http::Response> AdminGate::check(http::RequestHead& head, const Route& route) {
  if (route.door != Door::admin && route.door != Door::page) return std::nullopt;
  if (auto refused = refusal(head, route, config_, tickets_))
    return openai::error_response(*refused, route.dialect);
  return std::nullopt;
}

http::Response AdminGate::login() {
  http::Response reply = http::json_response(200, R"({"ok":true})");
  if (!config_.admin_key.empty())
    for (const auto& cookie : tickets_.set_cookies(tickets_.issue(AdminTickets::Clock::now())))
      reply.headers.add("Set-Cookie", cookie);
  return reply;
}

}  // namespace switchyard::gateway
