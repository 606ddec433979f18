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
