#include "gateway/admin_gate.h"

namespace switchyard::gateway {

std::optional<openai::ApiError> AdminGate::screen(const http::RequestHead& head,
                                                  const Route& route) const {
  if (auto refused = host_refusal(head, config_.listen, config_.admin_hosts)) return refused;
  // The page holds no data: with an admin key anyone may load it (it asks
  // for the key).
  if (route.kind == RouteKind::ui && !config_.admin_key.empty()) return std::nullopt;
  if (auto refused = admin_refusal(head, config_.admin_key, &tickets_, AdminTickets::Clock::now()))
    return refused;
  return cross_origin_refusal(head);
}

http::Response AdminGate::login() {
  http::Response reply = http::json_response(200, R"({"ok":true})");
  if (!config_.admin_key.empty())
    for (const auto& cookie : tickets_.set_cookies(tickets_.issue(AdminTickets::Clock::now())))
      reply.headers.add("Set-Cookie", cookie);
  return reply;
}

}  // namespace switchyard::gateway
