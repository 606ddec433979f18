#include "gateway/admin_access.h"

#include <gtest/gtest.h>

namespace switchyard::gateway {
namespace {

http::RequestHead head_from(std::string remote, std::string authorization = {}) {
  http::RequestHead head;
  head.method = "GET";
  head.target = "/admin/status";
  head.remote = std::move(remote);
  if (!authorization.empty()) head.headers.add("Authorization", authorization);
  return head;
}

TEST(AdminAccess, WithoutAKeyLoopbackOnly) {
  EXPECT_FALSE(admin_refusal(head_from("127.0.0.1:5000"), ""));
  EXPECT_FALSE(admin_refusal(head_from("::1:5000"), ""));
  EXPECT_FALSE(admin_refusal(head_from("::ffff:127.0.0.1:5000"), ""));
  auto refusal = admin_refusal(head_from("192.168.1.20:5000"), "");
  ASSERT_TRUE(refusal);
  EXPECT_EQ(refusal->status, 403);
  EXPECT_NE(refusal->message.find("admin_key"), std::string::npos);
  EXPECT_TRUE(admin_refusal(head_from("?"), ""));
}

TEST(AdminAccess, WithAKeyEveryClientMustPresentIt) {
  EXPECT_FALSE(admin_refusal(head_from("192.168.1.20:5000", "Bearer sk-admin"), "sk-admin"));
  auto missing = admin_refusal(head_from("127.0.0.1:5000"), "sk-admin");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 401);
  auto wrong = admin_refusal(head_from("127.0.0.1:5000", "Bearer sk-admiN"), "sk-admin");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
}

}  // namespace
}  // namespace switchyard::gateway

namespace switchyard::gateway {
namespace {

http::RequestHead browser_head(std::string method, std::string host) {
  http::RequestHead head;
  head.method = std::move(method);
  head.target = "/admin/profile";
  head.remote = "127.0.0.1:5000";
  if (!host.empty()) head.headers.add("Host", host);
  return head;
}

TEST(AdminHost, KnownNamesAndAddressesOnly) {
  const std::vector<std::string> hosts{"gpu-box.lan"};
  const std::string listen = "127.0.0.1:8080";
  for (const char* host : {"127.0.0.1:8080", "localhost:8080", "LOCALHOST", "[::1]:8080",
                           "192.168.1.20:8080", "gpu-box.lan:8080", "GPU-BOX.lan", ""})
    EXPECT_FALSE(host_refusal(browser_head("GET", host), listen, hosts)) << host;
  // DNS rebinding: a name of the attacker's that resolves to loopback.
  const auto refused = host_refusal(browser_head("POST", "evil.example:8080"), listen, hosts);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 403);
  EXPECT_NE(refused->message.find("admin_hosts"), std::string::npos);
  EXPECT_TRUE(host_refusal(browser_head("GET", "localhost.evil.example"), listen, hosts));
  // The listen address's own name.
  EXPECT_FALSE(host_refusal(browser_head("GET", "box:9000"), "box:9000", {}));
}

TEST(AdminCrossOrigin, ChangesOnlyFromTheSameOriginAsJson) {
  auto head = browser_head("POST", "127.0.0.1:8080");
  head.headers.add("Content-Type", "application/json; charset=utf-8");
  EXPECT_FALSE(cross_origin_refusal(head));  // a script or the CLI: no Origin, no Sec-Fetch-Site
  auto same = head;
  same.headers.add("Origin", "http://127.0.0.1:8080");
  same.headers.add("Sec-Fetch-Site", "same-origin");
  EXPECT_FALSE(cross_origin_refusal(same));
  // A page on another local port: same site, another origin.
  auto other_port = head;
  other_port.headers.add("Sec-Fetch-Site", "same-site");
  EXPECT_EQ(cross_origin_refusal(other_port)->status, 403);
  auto other_origin = head;
  other_origin.headers.add("Origin", "http://127.0.0.1:9999");
  EXPECT_EQ(cross_origin_refusal(other_origin)->status, 403);
  auto opaque = head;
  opaque.headers.add("Origin", "null");
  EXPECT_EQ(cross_origin_refusal(opaque)->status, 403);
  // What a no-cors request may send: text/plain, a form, nothing.
  for (const char* type :
       {"text/plain", "application/x-www-form-urlencoded", "", "application/jsonp"}) {
    auto plain = browser_head("POST", "127.0.0.1:8080");
    if (*type) plain.headers.add("Content-Type", type);
    const auto refused = cross_origin_refusal(plain);
    ASSERT_TRUE(refused) << type;
    EXPECT_EQ(refused->status, 415) << type;
  }
  EXPECT_FALSE(cross_origin_refusal(browser_head("GET", "127.0.0.1:8080")));  // reads
}

TEST(AdminPage, SecurityHeaders) {
  http::Headers h;
  add_page_headers(h);
  EXPECT_EQ(h.find("x-frame-options"), "DENY");
  EXPECT_EQ(h.find("x-content-type-options"), "nosniff");
  const auto csp = h.find("content-security-policy");
  ASSERT_TRUE(csp);
  EXPECT_NE(csp->find("frame-ancestors 'none'"), std::string_view::npos);
  EXPECT_NE(csp->find("script-src 'self'"), std::string_view::npos);
}

}  // namespace
}  // namespace switchyard::gateway
