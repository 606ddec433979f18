#include "tenancy/redis_url.h"

#include <gtest/gtest.h>

namespace switchyard::tenancy {
namespace {

TEST(RedisUrl, HostPortAndDatabase) {
  auto a = parse_redis_url("redis://127.0.0.1:6380/2");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(*a, (RedisAddress{"127.0.0.1", 6380, 2}));
}

TEST(RedisUrl, PortAndDatabaseDefault) {
  auto a = parse_redis_url("redis://cache.internal");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(*a, (RedisAddress{"cache.internal", 6379, 0}));
  auto b = parse_redis_url("redis://cache/");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->db, 0);
}

TEST(RedisUrl, Ipv6InBrackets) {
  auto a = parse_redis_url("redis://[::1]:7000/1");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(*a, (RedisAddress{"::1", 7000, 1}));
}

TEST(RedisUrl, ErrorsNameTheFieldAndTheProblem) {
  struct Case {
    const char* url;
    const char* says;
  };
  for (const Case& c :
       {Case{"127.0.0.1:6379", "does not start with redis://"}, Case{"rediss://h:1", "TLS"},
        Case{"redis://u:p@h:1", "credentials"}, Case{"redis://h:0", "the port '0'"},
        Case{"redis://h:x", "the port 'x'"}, Case{"redis://h:", "empty port"},
        Case{"redis://:6379", "no host"}, Case{"redis://h:1/x", "the database 'x'"},
        Case{"redis://h:1/-1", "the database '-1'"}, Case{"redis://[::1", "unclosed"}}) {
    auto a = parse_redis_url(c.url, "redis");
    ASSERT_FALSE(a) << c.url;
    EXPECT_TRUE(a.error().message.starts_with("redis: '")) << a.error().message;
    EXPECT_NE(a.error().message.find(c.says), std::string::npos) << a.error().message;
  }
}

}  // namespace
}  // namespace switchyard::tenancy
