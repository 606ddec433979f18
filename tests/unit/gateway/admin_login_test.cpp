// The dashboard's login (a ticket in an HttpOnly cookie instead of the admin
// key in the event stream's URL) and the access log's targets.
#include <gtest/gtest.h>

#include "gateway/admin_access.h"
#include "gateway/log_target.h"

namespace switchyard::gateway {
namespace {

using Clock = AdminTickets::Clock;

http::RequestHead events_head(std::string target, std::string cookie = {}) {
  http::RequestHead head;
  head.method = "GET";
  head.target = std::move(target);
  head.remote = "10.0.0.9:5000";
  if (!cookie.empty()) head.headers.add("Cookie", cookie);
  return head;
}

TEST(AdminLogin, AKeyInTheQueryNoLongerCounts) {
  AdminTickets tickets;
  const auto refused =
      admin_refusal(events_head("/admin/events?key=sk-admin"), "sk-admin", &tickets, Clock::now());
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401);
}

TEST(AdminLogin, ATicketStandsForTheKeyUntilItExpires) {
  AdminTickets tickets(std::chrono::seconds(60));
  const auto t0 = Clock::now();
  const std::string ticket = tickets.issue(t0);
  EXPECT_EQ(ticket.size(), 64u);
  const auto cookie = "theme=dark; switchyard_admin=" + ticket + "; other=1";
  EXPECT_FALSE(admin_refusal(events_head("/admin/events", cookie), "sk-admin", &tickets, t0));
  const auto later = admin_refusal(events_head("/admin/events", cookie), "sk-admin", &tickets,
                                   t0 + std::chrono::seconds(61));
  ASSERT_TRUE(later);
  EXPECT_EQ(later->status, 401);
  EXPECT_NE(later->message.find("expired"), std::string::npos);
  // A made-up ticket, or one of the right form but not issued.
  EXPECT_TRUE(
      admin_refusal(events_head("/admin/events", "switchyard_admin=" + std::string(64, 'a')),
                    "sk-admin", &tickets, t0));
  // Without the table (not a route that takes tickets) a cookie is nothing.
  EXPECT_TRUE(admin_refusal(events_head("/admin/events", cookie), "sk-admin", nullptr, t0));
}

TEST(AdminLogin, TheCookieIsHttpOnlyAndStrict) {
  AdminTickets tickets(std::chrono::seconds(3600));
  const auto cookies = tickets.set_cookies(tickets.issue(Clock::now()));
  ASSERT_EQ(cookies.size(), 2u);  // the admin routes and /models/load|unload
  for (const auto& set : cookies) {
    EXPECT_EQ(set.find("switchyard_admin="), 0u);
    EXPECT_NE(set.find("; HttpOnly"), std::string::npos);
    EXPECT_NE(set.find("; SameSite=Strict"), std::string::npos);
    EXPECT_NE(set.find("; Max-Age=3600"), std::string::npos);
  }
  EXPECT_NE(cookies[0].find("; Path=/admin;"), std::string::npos);
  EXPECT_NE(cookies[1].find("; Path=/models;"), std::string::npos);
}

TEST(AdminLogin, TicketsAreBounded) {
  AdminTickets tickets(std::chrono::seconds(60), 2);
  const auto t0 = Clock::now();
  const auto first = tickets.issue(t0);
  const auto second = tickets.issue(t0 + std::chrono::seconds(1));
  const auto third = tickets.issue(t0 + std::chrono::seconds(2));
  EXPECT_FALSE(tickets.valid(first, t0 + std::chrono::seconds(3)));  // the oldest made room
  EXPECT_TRUE(tickets.valid(second, t0 + std::chrono::seconds(3)));
  EXPECT_TRUE(tickets.valid(third, t0 + std::chrono::seconds(3)));
}

TEST(LogTarget, QueryValuesAreLeftOut) {
  std::string scratch;
  EXPECT_EQ(log_target("/v1/chat/completions", scratch), "/v1/chat/completions");
  EXPECT_EQ(log_target("/admin/events?key=adm-secret", scratch), "/admin/events?key=*");
  EXPECT_EQ(log_target("/x?a=1&&b&c=sk-2", scratch), "/x?a=*&b&c=*");
  EXPECT_EQ(log_target("/x?", scratch), "/x?");
}

TEST(LogTarget, AStoredResponsesIdIsLeftOut) {
  std::string scratch;
  EXPECT_EQ(log_target("/v1/responses/resp_0a1b", scratch), "/v1/responses/*");
  EXPECT_EQ(log_target("/v1/responses/resp_0a1b/cancel?x=1", scratch),
            "/v1/responses/*/cancel?x=*");
  EXPECT_EQ(log_target("/v1/responses/input_tokens", scratch), "/v1/responses/input_tokens");
  EXPECT_EQ(log_target("/v1/responses", scratch), "/v1/responses");
}

}  // namespace
}  // namespace switchyard::gateway
