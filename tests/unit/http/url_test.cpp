#include "http/url.h"

#include <gtest/gtest.h>

namespace switchyard::http {
namespace {

TEST(ParseUrl, HostPortAndPath) {
  auto u = parse_url("http://127.0.0.1:8081/prefix/");
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 8081);
  EXPECT_EQ(u->path, "/prefix");
  EXPECT_EQ(u->authority(), "127.0.0.1:8081");
}

TEST(ParseUrl, DefaultPortAndIpv6) {
  EXPECT_EQ(parse_url("http://localhost")->port, 80);
  auto v6 = parse_url("http://[::1]:9000");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 9000);
}

TEST(ParseUrl, ErrorsSayWhatIsWrong) {
  EXPECT_NE(parse_url("https://x").error().message.find("https is not supported"),
            std::string::npos);
  EXPECT_NE(parse_url("ftp://x").error().message.find("must start with http://"),
            std::string::npos);
  EXPECT_NE(parse_url("http://x:0").error().message.find("port"), std::string::npos);
  EXPECT_NE(parse_url("http://x:99999").error().message.find("port"), std::string::npos);
  EXPECT_NE(parse_url("http://:80").error().message.find("no host"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::http
