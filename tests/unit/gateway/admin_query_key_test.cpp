#include <gtest/gtest.h>

#include "gateway/admin_access.h"

namespace switchyard::gateway {
namespace {

http::RequestHead events_head(std::string target, std::string remote = "10.0.0.9:5000") {
  http::RequestHead head;
  head.method = "GET";
  head.target = std::move(target);
  head.remote = std::move(remote);
  return head;
}

TEST(AdminQueryKey, TheEventStreamMayCarryTheKeyInItsQuery) {
  EXPECT_FALSE(admin_refusal(events_head("/admin/events?key=sk-admin"), "sk-admin", true));
  EXPECT_FALSE(
      admin_refusal(events_head("/admin/events?x=1&key=sk%2Badmin%21"), "sk+admin!", true));
  const auto wrong = admin_refusal(events_head("/admin/events?key=nope"), "sk-admin", true);
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  // Elsewhere the query does not count: a key in a URL ends up in logs.
  const auto elsewhere = admin_refusal(events_head("/admin/status?key=sk-admin"), "sk-admin");
  ASSERT_TRUE(elsewhere);
  EXPECT_EQ(elsewhere->status, 401);
  // Without an admin key, still loopback only whatever the query says.
  EXPECT_EQ(admin_refusal(events_head("/admin/events?key=x"), "", true)->status, 403);
  EXPECT_FALSE(admin_refusal(events_head("/admin/events", "127.0.0.1:4000"), "", true));
}

TEST(AdminQueryKey, QueryParameters) {
  EXPECT_EQ(query_parameter("/a?key=v", "key"), "v");
  EXPECT_EQ(query_parameter("/a?keys=1&key=a+b%20c", "key"), "a b c");
  EXPECT_EQ(query_parameter("/a?key", "key"), "");
  EXPECT_EQ(query_parameter("/a?key=%zz%4", "key"), "%zz%4");
  EXPECT_EQ(query_parameter("/a", "key"), std::nullopt);
  EXPECT_EQ(query_parameter("/a?other=1", "key"), std::nullopt);
}

}  // namespace
}  // namespace switchyard::gateway
