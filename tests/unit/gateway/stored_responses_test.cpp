#include "gateway/stored_responses.h"

#include <gtest/gtest.h>

#include "gateway/response_homes.h"
#include "gateway/routes.h"

namespace switchyard::gateway {
namespace {

ResponseHome home(std::string instance, std::string key = "alice") {
  return ResponseHome{std::move(instance), "m", "coder", std::move(key), "s1"};
}

TEST(ResponseHomes, RemembersTheInstanceForTheKeyThatMadeIt) {
  ResponseHomes homes;
  homes.remember("resp_1", home("gpu1"));
  const ResponseHome* found = homes.find("resp_1", "alice");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->instance, "gpu1");
  EXPECT_EQ(found->client_model, "coder");
  EXPECT_EQ(homes.find("resp_1", "bob"), nullptr) << "another key's response is not found";
  EXPECT_EQ(homes.find("resp_2", "alice"), nullptr);
}

TEST(ResponseHomes, TheLeastRecentlyUsedGoFirstPastTheCapacity) {
  ResponseHomes homes(2);
  homes.remember("a", home("gpu0"));
  homes.remember("b", home("gpu1"));
  ASSERT_NE(homes.find("a", "alice"), nullptr);  // a is now the most recent
  homes.remember("c", home("gpu2"));
  EXPECT_EQ(homes.size(), 2u);
  EXPECT_EQ(homes.find("b", "alice"), nullptr);
  EXPECT_NE(homes.find("a", "alice"), nullptr);
  EXPECT_NE(homes.find("c", "alice"), nullptr);
  // Remembered again: moved, not doubled.
  homes.remember("a", home("gpu3"));
  EXPECT_EQ(homes.size(), 2u);
  EXPECT_EQ(homes.find("a", "alice")->instance, "gpu3");
}

TEST(StoredResponses, TheIdIsThePathsSegmentAfterTheRoute) {
  EXPECT_EQ(StoredResponses::path_id("/v1/responses/resp_1"), "resp_1");
  EXPECT_EQ(StoredResponses::path_id("/v1/responses/resp_1/cancel"), "resp_1");
  EXPECT_EQ(StoredResponses::path_id("/v1/chat/completions"), "");
}

TEST(Routes, AStoredResponseRouteTakesItsMethodsAndLeavesTheOthers) {
  const Route* stored = find_route("/v1/responses/resp_1");
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(stored->endpoint, openai::Endpoint::stored_response);
  for (const char* m : {"GET", "DELETE", "POST"}) EXPECT_TRUE(stored->allows(m)) << m;
  EXPECT_FALSE(stored->allows("PUT"));
  EXPECT_FALSE(stored->allows("HEAD"));
  // The exact routes under the same prefix keep theirs.
  EXPECT_EQ(find_route("/v1/responses/input_tokens")->endpoint,
            openai::Endpoint::responses_input_tokens);
  EXPECT_EQ(find_route("/v1/responses")->endpoint, openai::Endpoint::responses);
  const Route* root = find_route("/");
  EXPECT_TRUE(root->allows("HEAD"));
  EXPECT_FALSE(root->allows("POST"));
}

}  // namespace
}  // namespace switchyard::gateway
