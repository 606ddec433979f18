#include "gateway/session_id.h"

#include <gtest/gtest.h>

namespace switchyard::gateway {
namespace {

TEST(SessionId, TheClientsHeaderWins) {
  http::Headers headers;
  headers.add("X-Session-Id", "agent-7");
  auto id = session_id(headers, "alice", "qwen", 42);
  ASSERT_TRUE(id);
  EXPECT_EQ(*id, "agent-7");
}

TEST(SessionId, DerivedFromKeyModelAndConversation) {
  const http::Headers none;
  const auto id = [&](std::string_view key, std::string_view model, std::uint64_t c) {
    auto r = session_id(none, key, model, c);
    EXPECT_TRUE(r);
    return r ? *r : std::string("?");
  };
  EXPECT_EQ(id("alice", "qwen", 42), id("alice", "qwen", 42));
  EXPECT_NE(id("alice", "qwen", 42), id("bob", "qwen", 42));
  EXPECT_NE(id("alice", "qwen", 42), id("alice", "llama", 42));
  EXPECT_NE(id("alice", "qwen", 42), id("alice", "qwen", 43));
  EXPECT_NE(id("ab", "c", 42), id("a", "bc", 42));
  EXPECT_EQ(id("alice", "qwen", 0), "");  // no conversation, no session
  // The same id on every gateway sharing limits, whatever its build.
  EXPECT_EQ(id("alice", "qwen", 42), "c-22498d8b0d3789e8");
  EXPECT_EQ(id("", "m", 7), "c-c82f535d89162714");
}

TEST(SessionId, RefusesAnUnprintableOrHugeHeader) {
  for (std::string bad :
       {std::string(), std::string("a b"), std::string(129, 'x'), std::string("caf\xc3\xa9")}) {
    http::Headers headers;
    headers.add("X-Session-Id", bad);
    auto id = session_id(headers, "", "m", 0);
    ASSERT_FALSE(id) << bad;
    EXPECT_NE(id.error().message.find("X-Session-Id"), std::string::npos);
  }
}

}  // namespace
}  // namespace switchyard::gateway
