#include "openai/request_inspector.h"

#include <gtest/gtest.h>

namespace switchyard::openai {
namespace {

using E = Endpoint;

TEST(RequestInspector, ExtractsModelStreamAndUsageFlag) {
  RequestInspector inspector;
  const std::string body =
      R"({"messages":[{"role":"user","content":"hi"}],"model" : "default","stream":true,)"
      R"("stream_options":{"include_usage":true}})";
  auto facts = inspector.inspect(body, E::chat_completions);
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ(facts->model, "default");
  EXPECT_TRUE(facts->stream);
  EXPECT_TRUE(facts->include_usage);
  EXPECT_EQ(body.substr(facts->model_offset, facts->model_length), "\"default\"");
}

TEST(RequestInspector, ReplacesOnlyTheModelValue) {
  RequestInspector inspector;
  const std::string body =
      R"({"model":"default","messages":[{"role":"user","content":"model: \"default\""}]})";
  auto facts = inspector.inspect(body, E::chat_completions);
  ASSERT_TRUE(facts);
  EXPECT_EQ(replace_model(body, *facts, "qwen-27b"),
            R"({"model":"qwen-27b","messages":[{"role":"user","content":"model: \"default\""}]})");
}

TEST(RequestInspector, LocatesTheTopLevelModelAfterNestedOnes) {
  RequestInspector inspector;
  const std::string body =
      R"({"messages":[{"role":"user","content":"x","model":"no"}],"model":"de\u0066ault"})";
  auto facts = inspector.inspect(body, E::chat_completions);
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ(facts->model, "default");
  EXPECT_EQ(replace_model(body, *facts, "qwen"),
            R"({"messages":[{"role":"user","content":"x","model":"no"}],"model":"qwen"})");
}

TEST(RequestInspector, AbsentModelIsEmpty) {
  RequestInspector inspector;
  auto facts = inspector.inspect(R"({"prompt":"x"})", E::completions);
  ASSERT_TRUE(facts);
  EXPECT_TRUE(facts->model.empty());
  EXPECT_FALSE(facts->stream);
}

struct BadCase {
  const char* body;
  Endpoint endpoint;
  const char* message_part;
};

class RequestInspectorErrors : public testing::TestWithParam<BadCase> {};

TEST_P(RequestInspectorErrors, NameTheProblem) {
  RequestInspector inspector;
  auto facts = inspector.inspect(GetParam().body, GetParam().endpoint);
  ASSERT_FALSE(facts);
  EXPECT_NE(facts.error().message.find(GetParam().message_part), std::string::npos)
      << facts.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    All, RequestInspectorErrors,
    testing::Values(
        BadCase{"", E::chat_completions, "empty"},
        BadCase{R"({"model":"m","messages":)", E::chat_completions, "not valid JSON"},
        BadCase{"[1,2]", E::chat_completions, "must be a JSON object"},
        BadCase{R"({"model":"m"})", E::chat_completions, "'messages' is required"},
        BadCase{R"({"model":"m","messages":"hi"})", E::chat_completions,
                "'messages' must be an array of messages, not a string"},
        BadCase{R"({"model":"m","messages":[]})", E::chat_completions, "must not be empty"},
        BadCase{R"({"model":7,"messages":[{}]})", E::chat_completions,
                "'model' must be a string, not a number"},
        BadCase{R"({"model":"a","messages":[{}],"model":"b"})", E::chat_completions,
                "'model' appears more than once"},
        BadCase{R"({"model":"m","messages":[{}],"stream":"yes"})", E::chat_completions,
                "'stream' must be a boolean"},
        BadCase{R"({"model":"m","messages":[{}],"max_tokens":"5"})", E::chat_completions,
                "'max_tokens' must be an integer"},
        BadCase{R"({"model":"m","messages":[{}],"stream_options":{"include_usage":1}})",
                E::chat_completions, "'stream_options.include_usage' must be a boolean"},
        BadCase{R"({"model":"m"})", E::completions, "'prompt' is required"},
        BadCase{R"({"model":"m","input":5})", E::embeddings,
                "'input' must be a string or an array"},
        BadCase{R"({"model":"m","content":5})", E::tokenize, "'content' must be a string"},
        BadCase{"{\"model\":\"m\",\"messages\":[{\"content\":\"\xff\"}]}", E::chat_completions,
                "not valid UTF-8"}));

}  // namespace
}  // namespace switchyard::openai
