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

http::Headers with(std::string name, std::string value) {
  http::Headers h;
  h.add(std::move(name), std::move(value));
  return h;
}

TEST(ModelCatalog, TheDefaultModelIsTheDefaultAliasOrTheOnlyModel) {
  EXPECT_EQ(ModelCatalog({{"qwen-27b", {"default"}}, {"llama-8b", {}}}).default_model(),
            "qwen-27b");
  EXPECT_EQ(ModelCatalog(std::vector<config::ModelConfig>{{"llama-8b", {}}}).default_model(),
            "llama-8b");
  EXPECT_FALSE(ModelCatalog({{"a", {}}, {"b", {}}}).default_model());
}

TEST(ApiKeys, BearerOrXApiKey) {
  ApiKeys keys({"sk-one", "sk-two"});
  EXPECT_TRUE(keys.enabled());
  EXPECT_TRUE(keys.allows(with("Authorization", "Bearer sk-one")));
  EXPECT_TRUE(keys.allows(with("Authorization", "bearer sk-two")));
  EXPECT_TRUE(keys.allows(with("x-api-key", "sk-two")));
  EXPECT_FALSE(keys.allows(with("Authorization", "Bearer sk-on")));
  EXPECT_FALSE(keys.allows(with("Authorization", "Bearer sk-one2")));
  EXPECT_FALSE(keys.allows(with("Authorization", "sk-one")));
  EXPECT_FALSE(keys.allows(with("x-api-key", "")));
  EXPECT_FALSE(keys.allows(with("x-api-key", "sk-three")));
  EXPECT_FALSE(keys.allows({}));
  EXPECT_TRUE(ApiKeys(std::vector<std::string>{}).allows({}));
}

}  // namespace
}  // namespace switchyard::gateway
