#include "gateway/model_catalog.h"

#include <gtest/gtest.h>

#include "gateway/api_keys.h"

namespace switchyard::gateway {
namespace {

TEST(ModelCatalog, ResolvesNamesAndAliases) {
  ModelCatalog c({{"qwen-27b", {"default", "qwen"}}, {"llama-8b", {}}});
  EXPECT_EQ(c.resolve("qwen-27b"), "qwen-27b");
  EXPECT_EQ(c.resolve("default"), "qwen-27b");
  EXPECT_EQ(c.resolve("llama-8b"), "llama-8b");
  EXPECT_FALSE(c.resolve("gpt-4"));
  EXPECT_EQ(c.describe(),
            "qwen-27b, default (alias of qwen-27b), qwen (alias of qwen-27b), llama-8b");
}

TEST(ApiKeys, BearerKeysOnly) {
  ApiKeys keys({"sk-one", "sk-two"});
  EXPECT_TRUE(keys.enabled());
  EXPECT_TRUE(keys.allows("Bearer sk-one"));
  EXPECT_TRUE(keys.allows("bearer sk-two"));
  EXPECT_FALSE(keys.allows("Bearer sk-on"));
  EXPECT_FALSE(keys.allows("Bearer sk-one2"));
  EXPECT_FALSE(keys.allows("sk-one"));
  EXPECT_FALSE(keys.allows(std::nullopt));
  EXPECT_TRUE(ApiKeys({}).allows(std::nullopt));
}

}  // namespace
}  // namespace switchyard::gateway
