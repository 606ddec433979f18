#include "openai/request_inspector.h"

#include <gtest/gtest.h>

#include <limits>

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
  EXPECT_EQ(body.substr(facts->model_token.offset, facts->model_token.length), "\"default\"");
}

TEST(RequestInspector, MaxTokensFromAnyOfItsNamesInOrder) {
  RequestInspector inspector;
  const auto max_tokens = [&](const std::string& fields) {
    const std::string body =
        R"({"messages":[{"role":"user","content":"hi","max_tokens":5}])" + fields + "}";
    auto facts = inspector.inspect(body, E::chat_completions);
    EXPECT_TRUE(facts) << body;
    return facts ? facts->max_tokens : std::nullopt;
  };
  EXPECT_EQ(max_tokens(R"(,"max_tokens":12)"), 12);
  EXPECT_EQ(max_tokens(R"(,"max_completion_tokens":7)"), 7);
  EXPECT_EQ(max_tokens(R"(,"n_predict":3)"), 3);
  EXPECT_EQ(max_tokens(R"(,"n_predict":3,"max_tokens":12)"), 12);
  EXPECT_EQ(max_tokens(R"(,"n":2)"), std::nullopt);
  EXPECT_EQ(max_tokens(R"(,"max_tokens":null)"), std::nullopt);
  EXPECT_EQ(max_tokens(""), std::nullopt);  // a message's own key is not the request's
}

TEST(RequestInspector, ReplacesOnlyTheModelValue) {
  RequestInspector inspector;
  const std::string body =
      R"({"model":"default","messages":[{"role":"user","content":"model: \"default\""}]})";
  auto facts = inspector.inspect(body, E::chat_completions);
  ASSERT_TRUE(facts);
  EXPECT_EQ(rewrite_request(body, *facts, "qwen-27b", false),
            R"({"model":"qwen-27b","messages":[{"role":"user","content":"model: \"default\""}]})");
}

TEST(RequestInspector, LocatesTheTopLevelModelAfterNestedOnes) {
  RequestInspector inspector;
  const std::string body =
      R"({"messages":[{"role":"user","content":"x","model":"no"}],"model":"de\u0066ault"})";
  auto facts = inspector.inspect(body, E::chat_completions);
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ(facts->model, "default");
  EXPECT_EQ(rewrite_request(body, *facts, "qwen", false),
            R"({"messages":[{"role":"user","content":"x","model":"no"}],"model":"qwen"})");
}

TEST(RequestInspector, LocatesThePromptAsSent) {
  RequestInspector inspector;
  const std::string chat = R"({"model":"m","messages": [{"role":"user","content":"hi"}] })";
  auto facts = inspector.inspect(chat, E::chat_completions);
  ASSERT_TRUE(facts);
  EXPECT_EQ(chat.substr(facts->prompt.offset, facts->prompt.length),
            R"([{"role":"user","content":"hi"}])");
  const std::string completion = R"({"prompt":"once upon","model":"m"})";
  facts = inspector.inspect(completion, E::completions);
  ASSERT_TRUE(facts);
  EXPECT_EQ(completion.substr(facts->prompt.offset, facts->prompt.length), R"("once upon")");
  EXPECT_EQ(facts->conversation, 0u);
  facts = inspector.inspect(R"({"input":"x"})", E::embeddings);
  ASSERT_TRUE(facts);
  EXPECT_EQ(facts->prompt.length, 0u);
}

// An agent's turns share the system prompt and first user message and grow
// after them: one conversation. Another first question is another one.
TEST(RequestInspector, ConversationIsTheOpeningUpToTheFirstUserMessage) {
  RequestInspector inspector;
  const auto conversation = [&](std::string_view body, E endpoint = E::chat_completions) {
    auto facts = inspector.inspect(body, endpoint);
    EXPECT_TRUE(facts) << body;
    return facts ? facts->conversation : 0;
  };
  const auto turn1 = conversation(
      R"({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"fix bug 1"}]})");
  const auto turn2 = conversation(
      R"({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"fix bug 1"},)"
      R"({"role":"assistant","content":"done"},{"role":"user","content":"now tests"}]})");
  const auto other = conversation(
      R"({"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"fix bug 2"}]})");
  EXPECT_NE(turn1, 0u);
  EXPECT_EQ(turn1, turn2);
  EXPECT_NE(turn1, other);
  // Anthropic's system prompt is a top-level field, and part of the opening.
  const auto a = conversation(
      R"({"max_tokens":8,"system":"A","messages":[{"role":"user","content":"q"}]})", E::messages);
  const auto b = conversation(
      R"({"max_tokens":8,"system":"B","messages":[{"role":"user","content":"q"}]})", E::messages);
  EXPECT_NE(a, b);
  // Its blocks (Claude Code sends an array) count by value, not by layout.
  const auto blocks = conversation(
      R"({"max_tokens":8,"system":[{"type":"text","text":"A","n":1}],"messages":[{"role":"user","content":"q"}]})",
      E::messages);
  EXPECT_EQ(
      blocks,
      conversation(R"({"max_tokens":8,"system":[ { "type" : "text", "text" : "A", "n" : 1 } ],)"
                   R"("messages":[{"role":"user","content":"q"}]})",
                   E::messages));
  EXPECT_NE(blocks, conversation(R"({"max_tokens":8,"system":[{"type":"text","text":"A","n":2}],)"
                                 R"("messages":[{"role":"user","content":"q"}]})",
                                 E::messages));
  EXPECT_NE(blocks, a);
}

TEST(RequestInspector, AbsentModelIsEmpty) {
  RequestInspector inspector;
  auto facts = inspector.inspect(R"({"prompt":"x"})", E::completions);
  ASSERT_TRUE(facts);
  EXPECT_TRUE(facts->model.empty());
  EXPECT_FALSE(facts->stream);
}

TEST(RequestInspector, ForcesUsageReportingWithoutTouchingTheRest) {
  RequestInspector inspector;
  const auto forced = [&](const std::string& body) {
    auto facts = inspector.inspect(body, E::chat_completions);
    EXPECT_TRUE(facts) << facts.error().message;
    EXPECT_TRUE(needs_rewrite(*facts, "m", true));
    return rewrite_request(body, *facts, "m", true);
  };
  EXPECT_EQ(
      forced(R"({"model":"m","stream":true,"messages":[{}]})"),
      R"({"stream_options":{"include_usage":true},"model":"m","stream":true,"messages":[{}]})");
  EXPECT_EQ(
      forced(R"({"model":"m","stream":true,"stream_options":{},"messages":[{}]})"),
      R"({"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{}]})");
  EXPECT_EQ(
      forced(R"({"model":"m","stream":true,"stream_options":{"x":1},"messages":[{}]})"),
      R"({"model":"m","stream":true,"stream_options":{"include_usage":true,"x":1},"messages":[{}]})");
  EXPECT_EQ(
      forced(
          R"({"model":"m","stream":true,"stream_options":{"include_usage":false},"messages":[{}]})"),
      R"({"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{}]})");
  EXPECT_EQ(
      forced(R"({"model":"m","stream":true,"stream_options":null,"messages":[{}]})"),
      R"({"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{}]})");
  // Both rewrites in one body, each in place.
  const std::string body = R"({"model":"alias","stream":true,"messages":[{"content":"x"}]})";
  auto facts = inspector.inspect(body, E::chat_completions);
  ASSERT_TRUE(facts);
  EXPECT_EQ(
      rewrite_request(body, *facts, "engine", true),
      R"({"stream_options":{"include_usage":true},"model":"engine","stream":true,"messages":[{"content":"x"}]})");
}

TEST(RequestInspector, NothingToRewriteWhenTheClientAskedForUsageOrDoesNotStream) {
  RequestInspector inspector;
  auto asked = inspector.inspect(
      R"({"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{}]})",
      E::chat_completions);
  ASSERT_TRUE(asked);
  EXPECT_FALSE(needs_rewrite(*asked, "m", true));
  auto whole = inspector.inspect(R"({"model":"m","messages":[{}]})", E::chat_completions);
  ASSERT_TRUE(whole);
  EXPECT_FALSE(needs_rewrite(*whole, "m", true));
  EXPECT_TRUE(needs_rewrite(*whole, "other", true));
}

TEST(RequestInspector, LlamacppAndAnthropicEndpointsNeedTheirFields) {
  RequestInspector inspector;
  EXPECT_TRUE(inspector.inspect(R"({"prompt":"x","n_predict":4})", E::native_completion));
  EXPECT_TRUE(inspector.inspect(R"({"input_prefix":"a","input_suffix":"b"})", E::infill));
  EXPECT_TRUE(inspector.inspect(R"({"content":"x"})", E::embedding));
  EXPECT_TRUE(inspector.inspect(R"({"input":"x"})", E::embedding));
  EXPECT_TRUE(inspector.inspect(R"({"query":"q","documents":["a"]})", E::rerank));
  EXPECT_TRUE(inspector.inspect(
      R"({"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]})", E::messages));
  EXPECT_FALSE(takes_slot(E::count_tokens));
  EXPECT_FALSE(takes_slot(E::apply_template));
  EXPECT_TRUE(takes_slot(E::messages));
}

// The Responses API: `input` is the prompt, `instructions` the system
// prompt, max_output_tokens the output asked for.
TEST(RequestInspector, ResponsesBodies) {
  RequestInspector inspector;
  const std::string body =
      R"({"model":"coder","instructions":"Be brief.","input":[{"role":"user","content":"Hi"}],)"
      R"("max_output_tokens":64,"stream":true})";
  auto facts = inspector.inspect(body, E::responses);
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ(facts->model, "coder");
  EXPECT_TRUE(facts->stream);
  EXPECT_EQ(facts->max_tokens, 64);
  EXPECT_EQ(body.substr(facts->prompt.offset, facts->prompt.length),
            R"([{"role":"user","content":"Hi"}])");
  EXPECT_NE(facts->conversation, 0u);
  // The next turn re-sends the opening: the same conversation.
  auto next = inspector.inspect(
      R"({"model":"coder","instructions":"Be brief.","input":[{"role":"user","content":"Hi"},)"
      R"({"type":"message","role":"assistant","content":"Hello"},{"role":"user","content":"More"}]})",
      E::responses);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->conversation, facts->conversation);
  auto other = inspector.inspect(
      R"({"model":"coder","instructions":"Be long.","input":[{"role":"user","content":"Hi"}]})",
      E::responses);
  ASSERT_TRUE(other);
  EXPECT_NE(other->conversation, facts->conversation);
  auto text = inspector.inspect(R"({"input":"Hi"})", E::responses);
  ASSERT_TRUE(text);
  EXPECT_NE(text->conversation, 0u);
  EXPECT_TRUE(inspector.inspect(R"({"input":"Hi"})", E::responses_input_tokens));
  EXPECT_FALSE(takes_slot(E::responses_input_tokens));
  EXPECT_FALSE(takes_slot(E::chat_input_tokens));
  EXPECT_TRUE(takes_slot(E::responses));
}

struct BadCase {
  const char* body;
  Endpoint endpoint;
  const char* message_part;
  const char* field = "";  // the field the error names as its param ("": not checked)
};

class RequestInspectorErrors : public testing::TestWithParam<BadCase> {};

TEST_P(RequestInspectorErrors, NameTheProblem) {
  RequestInspector inspector;
  auto facts = inspector.inspect(GetParam().body, GetParam().endpoint);
  ASSERT_FALSE(facts);
  EXPECT_NE(facts.error().message.find(GetParam().message_part), std::string::npos)
      << facts.error().message;
  if (*GetParam().field) {
    EXPECT_EQ(inspector.refused_field(), GetParam().field);
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, RequestInspectorErrors,
    testing::Values(
        BadCase{"", E::chat_completions, "empty"},
        BadCase{R"({"model":"m","messages":)", E::chat_completions, "not valid JSON"},
        BadCase{"[1,2]", E::chat_completions, "must be a JSON object"},
        BadCase{R"({"model":"m"})", E::chat_completions, "'messages' is required"},
        BadCase{R"({"model":"m"})", E::responses, "'input' is required", "input"},
        BadCase{R"({"input":5})", E::responses, "'input' must be a string or an array", "input"},
        BadCase{R"({"input":"x","instructions":[1]})", E::responses,
                "'instructions' must be a string", "instructions"},
        BadCase{R"({"input":"x","previous_response_id":7})", E::responses,
                "'previous_response_id' must be a string", "previous_response_id"},
        BadCase{R"({"input":"x","max_output_tokens":"9"})", E::responses,
                "'max_output_tokens' must be an integer", "max_output_tokens"},
        BadCase{R"({"model":"m"})", E::chat_input_tokens, "'messages' is required", "messages"},
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
                "not valid UTF-8"},
        BadCase{R"({"mod\u0065l":"echo","messages":[{}]})", E::chat_completions,
                "without escape sequences"},
        BadCase{R"({"model":"m"})", E::native_completion, "'prompt' is required"},
        BadCase{R"({"n":1})", E::embedding, "'content' or 'input' is required"},
        BadCase{R"({"documents":["a"]})", E::rerank, "'query' is required"},
        BadCase{R"({"model":"m","max_tokens":5})", E::messages, "'messages' is required",
                "messages"},
        BadCase{R"({"model":"m","messages":1})", E::chat_completions, "'messages' must be",
                "messages"},
        BadCase{R"({"model":"","messages":[{}]})", E::chat_completions, "must not be empty",
                "model"},
        BadCase{R"({"model":"m","max_tokens":-1,"messages":[{}]})", E::chat_completions,
                "'max_tokens' must be an integer >= 0", "max_tokens"},
        BadCase{R"({"max_completion_tokens":-5,"messages":[{}]})", E::chat_completions,
                "'max_completion_tokens' must be", "max_completion_tokens"},
        BadCase{R"({"prompt":"x","n_predict":-2})", E::native_completion,
                "'n_predict' must be an integer >= -1", "n_predict"},
        BadCase{R"({"prompt":"x","n":0})", E::completions, "'n' must be", "n"},
        BadCase{R"({"prompt":"x","temperature":"hot"})", E::completions, "must be a number",
                "temperature"},
        // Anthropic's Messages API: what it answers 400 to, with the field named.
        BadCase{R"({"model":"m","messages":[{"role":"user","content":"hi"}]})", E::messages,
                "'max_tokens' is required", "max_tokens"},
        BadCase{R"({"max_tokens":0,"messages":[{"role":"user","content":"hi"}]})", E::messages,
                "'max_tokens' must be an integer >= 1", "max_tokens"},
        BadCase{R"({"max_tokens":"8","messages":[{"role":"user","content":"hi"}]})", E::messages,
                "must be an integer", "max_tokens"},
        BadCase{R"({"max_tokens":8,"messages":[{"role":"developer","content":"hi"}]})", E::messages,
                "must be 'user', 'assistant' or 'system'", "messages.0.role"},
        BadCase{R"({"max_tokens":8,"messages":[{"role":"system","content":[{"type":"image"}]}]})",
                E::messages, "must be 'text'", "messages.0.content.0.type"},
        BadCase{R"({"max_tokens":8,"messages":[{"content":"hi"}]})", E::messages, "is required",
                "messages.0.role"},
        BadCase{R"({"max_tokens":8,"messages":["hi"]})", E::messages, "must be an object",
                "messages.0"},
        BadCase{R"({"max_tokens":8,"messages":[{"role":"user"}]})", E::messages, "is required",
                "messages.0.content"},
        BadCase{R"({"max_tokens":8,"messages":[{"role":"user","content":7}]})", E::messages,
                "array of content blocks", "messages.0.content"},
        BadCase{R"({"max_tokens":8,"messages":[{"role":"user","content":"a"},)"
                R"({"role":"assistant","content":[{"type":"text","text":"b"},{"type":"pdf"}]}]})",
                E::messages, "'pdf' is not a content block type", "messages.1.content.1.type"},
        BadCase{R"({"max_tokens":8,"messages":[{"role":"user","content":[{"text":"b"}]}]})",
                E::messages, "is required", "messages.0.content.0.type"},
        BadCase{R"({"max_tokens":8,"messages":[{"role":"user","content":[{"type":"text"}]}]})",
                E::messages, "must be a string", "messages.0.content.0.text"},
        BadCase{R"({"max_tokens":8,"system":5,"messages":[{"role":"user","content":"q"}]})",
                E::messages, "array of text blocks", "system"},
        BadCase{R"({"max_tokens":8,"system":[{"type":"image"}],"messages":[{"role":"user",)"
                R"("content":"q"}]})",
                E::messages, "must be 'text'", "system.0.type"},
        BadCase{R"({"messages":[{"role":"tool","content":"q"}]})", E::count_tokens,
                "must be 'user', 'assistant' or 'system'", "messages.0.role"}));

// What Anthropic accepts passes: count_tokens without max_tokens, every
// block type an agent sends, a system prompt as blocks.
TEST(RequestInspector, AcceptsAnthropicBodiesAsTheApiDoes) {
  RequestInspector inspector;
  const std::string turn =
      R"({"model":"m","max_tokens":1024,"system":[{"type":"text","text":"be brief",)"
      R"("cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"fix it"},)"
      R"({"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},)"
      R"({"type":"tool_use","id":"t1","name":"bash","input":{"cmd":"ls"}}]},)"
      R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a.c"},)"
      R"({"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]})";
  auto facts = inspector.inspect(turn, E::messages);
  ASSERT_TRUE(facts) << facts.error().message;
  EXPECT_EQ(facts->max_tokens, 1024);
  EXPECT_TRUE(
      inspector.inspect(R"({"messages":[{"role":"user","content":"q"}]})", E::count_tokens));
  // Claude Code's mid-conversation system message (its context, after the user's turn).
  EXPECT_TRUE(
      inspector.inspect(R"({"max_tokens":8,"messages":[{"role":"user","content":"q"},)"
                        R"({"role":"system","content":[{"type":"text","text":"agents: ..."}]}]})",
                        E::messages));
}

// A max_tokens past int64 saturates: the reservation is all there is, never
// a wrapped-around small number (nor nothing at all).
TEST(RequestInspector, HugeMaxTokensSaturates) {
  RequestInspector inspector;
  for (const char* n : {"9223372036854775807", "18446744073709551615"}) {
    auto facts = inspector.inspect(
        std::string(R"({"messages":[{"role":"user","content":"q"}],"max_tokens":)") + n + "}",
        E::chat_completions);
    ASSERT_TRUE(facts) << n;
    EXPECT_EQ(facts->max_tokens, std::numeric_limits<std::int64_t>::max()) << n;
  }
  auto native = inspector.inspect(R"({"prompt":"x","n_predict":-1})", E::native_completion);
  ASSERT_TRUE(native);
  EXPECT_EQ(native->max_tokens, std::nullopt);  // llama.cpp's "until the context is full"
}

}  // namespace
}  // namespace switchyard::openai
