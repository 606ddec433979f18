#include "openai/response_rewrite.h"

#include <gtest/gtest.h>

namespace switchyard::openai {
namespace {

TEST(ResponseRewriter, NamesTheClientsModelInABodyAndKeepsTheRest) {
  ResponseRewriter r("qwen-27b", false);
  std::string body =
      R"({"choices":[{"message":{"content":"\"model\":\"x\""}}],"model":"/models/stories260K.gguf",)"
      R"("usage":{"prompt_tokens":3,"completion_tokens":4}})";
  r.rewrite_body(body);
  EXPECT_EQ(body, R"({"choices":[{"message":{"content":"\"model\":\"x\""}}],"model":"qwen-27b",)"
                  R"("usage":{"prompt_tokens":3,"completion_tokens":4}})");
  ASSERT_TRUE(r.usage());
  EXPECT_EQ(r.usage()->completion_tokens, 4);
}

TEST(ResponseRewriter, NotesTheResponsesIdFromTheBodyOrTheFirstEventThatCarriesIt) {
  ResponseRewriter body_rewriter("coder", false, UsageMember::usage, true);
  std::string body = R"({"id":"resp_1","object":"response","model":"m","output":[]})";
  body_rewriter.rewrite_body(body);
  EXPECT_EQ(body_rewriter.response_id(), "resp_1");

  ResponseRewriter stream("coder", false, UsageMember::usage, true);
  std::string out;
  stream.rewrite_event(
      "event: response.created\ndata: {\"type\":\"response.created\","
      "\"response\":{\"id\":\"resp_2\",\"object\":\"response\"}}\n\n",
      out);
  stream.rewrite_event(
      "event: response.completed\ndata: {\"type\":\"response.completed\","
      "\"response\":{\"id\":\"resp_other\"}}\n\n",
      out);
  EXPECT_EQ(stream.response_id(), "resp_2");
  // Not asked for (every other endpoint): nothing is looked for.
  ResponseRewriter chat("coder", false);
  std::string chat_body = R"({"id":"resp_3","object":"response"})";
  chat.rewrite_body(chat_body);
  EXPECT_EQ(chat.response_id(), "");
}

TEST(ResponseRewriter, RewritesEveryChunkAndAnthropicsMessageStart) {
  ResponseRewriter r("claude-local", false);
  std::string out;
  r.rewrite_event("data: {\"choices\":[],\"model\":\"/m.gguf\",\"object\":\"x\"}\n\n", out);
  EXPECT_EQ(out, "data: {\"choices\":[],\"model\":\"claude-local\",\"object\":\"x\"}\n\n");
  out.clear();
  r.rewrite_event(
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"a\","
      "\"model\":\"/m.gguf\",\"usage\":{\"input_tokens\":2,\"output_tokens\":0}}}\n\n",
      out);
  EXPECT_EQ(out,
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"a\","
            "\"model\":\"claude-local\",\"usage\":{\"input_tokens\":2,\"output_tokens\":0}}}\n\n");
  ASSERT_TRUE(r.usage());
  EXPECT_EQ(r.usage()->prompt_tokens, 2);
  out.clear();
  r.rewrite_event("data: [DONE]\n\n", out);
  EXPECT_EQ(out, "data: [DONE]\n\n");
}

// After the first chunk the model is found by a search for the member as the
// engine wrote it; the same bytes escaped inside a string are not that
// member, and a chunk written otherwise still gets the full scan.
TEST(ResponseRewriter, LaterChunksOfAStreamAreRewrittenAlike) {
  ResponseRewriter r("qwen", false);
  std::string out;
  r.rewrite_event("data: {\"id\":\"1\",\"model\":\"/m.gguf\",\"choices\":[]}\n\n", out);
  EXPECT_EQ(out, "data: {\"id\":\"1\",\"model\":\"qwen\",\"choices\":[]}\n\n");
  out.clear();
  r.rewrite_event(
      "data: {\"choices\":[{\"delta\":{\"content\":\"say \\\"model\\\":\\\"/m.gguf\\\"\"}}],"
      "\"model\":\"/m.gguf\"}\n\n",
      out);
  EXPECT_EQ(out,
            "data: {\"choices\":[{\"delta\":{\"content\":\"say \\\"model\\\":\\\"/m.gguf\\\"\"}}],"
            "\"model\":\"qwen\"}\n\n");
  out.clear();
  r.rewrite_event("data: {\"model\" : \"/m.gguf\",\"choices\":[]}\n\n", out);
  EXPECT_EQ(out, "data: {\"model\" : \"qwen\",\"choices\":[]}\n\n");
}

TEST(ResponseRewriter, DropsOnlyTheForcedUsageChunk) {
  ResponseRewriter r("m", true);
  std::string out;
  const std::string finish =
      "data: "
      "{\"choices\":[{\"finish_reason\":\"length\",\"index\":0,\"delta\":{}}],\"model\":\"m\"}\n\n";
  r.rewrite_event(finish, out);
  r.rewrite_event(
      "data: "
      "{\"choices\":[],\"model\":\"m\",\"usage\":{\"completion_tokens\":16,\"prompt_tokens\":46}}"
      "\n\n",
      out);
  r.rewrite_event("data: [DONE]\n\n", out);
  EXPECT_EQ(out, finish + "data: [DONE]\n\n");
  ASSERT_TRUE(r.usage());
  EXPECT_EQ(r.usage()->prompt_tokens, 46);
  EXPECT_EQ(r.usage()->completion_tokens, 16);
}

// llama-server puts `timings` on the usage chunk the gateway asked for
// (shared/reference/llamacpp/chat_stream.sse): a
// client that did not ask gets them in the finish chunk, and never a chunk
// without choices.
TEST(ResponseRewriter, AStrippedUsageChunksOtherMembersJoinTheFinishChunk) {
  ResponseRewriter r("client", true);
  std::string out;
  r.rewrite_event(
      "data: {\"choices\":[{\"finish_reason\":\"length\",\"index\":0,\"delta\":{}}],"
      "\"model\":\"/m.gguf\"}\n\n",
      out);
  EXPECT_EQ(out, "");  // held until the next event says what follows
  r.rewrite_event(
      "data: {\"choices\":[],\"created\":1,\"id\":\"c1\",\"model\":\"/m.gguf\","
      "\"object\":\"chat.completion.chunk\",\"usage\":{\"completion_tokens\":16,"
      "\"prompt_tokens\":46},\"timings\":{\"prompt_n\":35,\"predicted_n\":16}}\n\n",
      out);
  EXPECT_EQ(out,
            "data: {\"choices\":[{\"finish_reason\":\"length\",\"index\":0,\"delta\":{}}],"
            "\"model\":\"client\",\"timings\":{\"prompt_n\":35,\"predicted_n\":16}}\n\n");
  ASSERT_TRUE(r.usage());
  EXPECT_EQ(r.usage()->completion_tokens, 16);
  out.clear();
  r.rewrite_event("data: [DONE]\n\n", out);
  EXPECT_EQ(out, "data: [DONE]\n\n");
  // A usage chunk with nothing else is dropped; the held chunk goes out as it was.
  ResponseRewriter plain("client", true);
  out.clear();
  plain.rewrite_event("data: {\"choices\":[{\"finish_reason\":\"stop\",\"delta\":{}}]}\n\n", out);
  plain.rewrite_event("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1}}\n\n", out);
  EXPECT_EQ(out, "data: {\"choices\":[{\"finish_reason\":\"stop\",\"delta\":{}}]}\n\n");
  // A stream that ends after the finish chunk still delivers it.
  ResponseRewriter cut("client", true);
  out.clear();
  cut.rewrite_event("data: {\"choices\":[{\"finish_reason\":\"stop\",\"delta\":{}}]}\n\n", out);
  cut.finish_stream(out);
  EXPECT_EQ(out, "data: {\"choices\":[{\"finish_reason\":\"stop\",\"delta\":{}}]}\n\n");
}

TEST(ResponseRewriter, KeepsTheUsageChunkWhenTheClientAskedForIt) {
  ResponseRewriter r("m", false);
  std::string out;
  const std::string usage =
      "data: "
      "{\"choices\":[],\"model\":\"m\",\"usage\":{\"completion_tokens\":1,\"prompt_tokens\":2}}"
      "\n\n";
  r.rewrite_event(usage, out);
  EXPECT_EQ(out, usage);
}

// llama.cpp's own /completion stream ends with tokens_predicted, not usage.
TEST(ResponseRewriter, NativeStreamsCountTokensPredicted) {
  ResponseRewriter r("m", false, UsageMember::tokens_predicted);
  std::string out;
  r.rewrite_event("data: {\"content\":\" once\",\"stop\":false}\n\n", out);
  EXPECT_FALSE(r.usage());
  r.rewrite_event(
      "data: {\"content\":\"\",\"stop\":true,\"model\":\"/m.gguf\",\"tokens_predicted\":7,"
      "\"tokens_evaluated\":3}\n\n",
      out);
  ASSERT_TRUE(r.usage());
  EXPECT_EQ(r.usage()->prompt_tokens, 3);
  EXPECT_EQ(r.usage()->completion_tokens, 7);
  EXPECT_NE(out.find("\"model\":\"m\""), std::string::npos);
}

// Anthropic names the model once, in message_start; the deltas after it
// pass unchanged and message_delta's usage is merged in.
TEST(ResponseRewriter, AnthropicDeltasPassAndTheirUsageMerges) {
  ResponseRewriter r("claude-local", false);
  std::string out;
  r.rewrite_event(
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"/m.gguf\","
      "\"usage\":{\"input_tokens\":5,\"output_tokens\":0}}}\n\n",
      out);
  out.clear();
  const std::string delta =
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
      "\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n";
  r.rewrite_event(delta, out);
  EXPECT_EQ(out, delta);
  r.rewrite_event(
      "event: message_delta\ndata: "
      "{\"type\":\"message_delta\",\"usage\":{\"output_tokens\":9}}\n\n",
      out);
  ASSERT_TRUE(r.usage());
  EXPECT_EQ(r.usage()->prompt_tokens, 5);
  EXPECT_EQ(r.usage()->completion_tokens, 9);
}

TEST(ResponseRewriter, ReadsABodysUsageInEachEnginesShape) {
  // llama.cpp's own /completion: no `usage`, members of its own.
  ResponseRewriter native("m", false);
  std::string completion =
      R"({"content":"hi","model":"/x.gguf","tokens_predicted":7,"tokens_evaluated":12})";
  native.rewrite_body(completion);
  EXPECT_EQ(completion,
            R"({"content":"hi","model":"m","tokens_predicted":7,"tokens_evaluated":12})");
  ASSERT_TRUE(native.usage());
  EXPECT_EQ(native.usage()->prompt_tokens, 12);
  EXPECT_EQ(native.usage()->completion_tokens, 7);
  // Anthropic's message: its input tokens leave out what was read from the cache.
  ResponseRewriter anthropic("claude", false);
  std::string message =
      R"({"id":"m1","type":"message","model":"/x.gguf","content":[],)"
      R"("usage":{"input_tokens":5,"cache_read_input_tokens":20,"output_tokens":3}})";
  anthropic.rewrite_body(message);
  EXPECT_NE(message.find(R"("model":"claude")"), std::string::npos);
  ASSERT_TRUE(anthropic.usage());
  EXPECT_EQ(anthropic.usage()->prompt_tokens, 25);
  EXPECT_EQ(anthropic.usage()->cached_tokens, 20);
  EXPECT_EQ(anthropic.usage()->completion_tokens, 3);
  // Without a client model to name, usage is still read.
  ResponseRewriter unnamed("", false);
  std::string body = R"({"model":"/x.gguf","usage":{"prompt_tokens":2,"completion_tokens":1}})";
  unnamed.rewrite_body(body);
  EXPECT_EQ(body, R"({"model":"/x.gguf","usage":{"prompt_tokens":2,"completion_tokens":1}})");
  ASSERT_TRUE(unnamed.usage());
  EXPECT_EQ(unnamed.usage()->prompt_tokens, 2);
}

// The Responses API: the model and usage inside `response`, input tokens
// counting the cached ones (unlike Anthropic's), and only *.delta events
// counted as generated text.
TEST(ResponseRewriter, ResponsesApiEventsAndBody) {
  ResponseRewriter r("coder", false);
  std::string out;
  EXPECT_FALSE(r.rewrite_event(
      "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":"
      "\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\"}}\n\n",
      out));
  EXPECT_TRUE(r.rewrite_event(
      "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
      "\"item_id\":\"msg_1\",\"delta\":\" Once\"}\n\n",
      out));
  EXPECT_TRUE(r.rewrite_event(
      "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
      "\"item_id\":\"msg_1\",\"delta\":\" upon\"}\n\n",
      out));
  EXPECT_FALSE(r.rewrite_event(
      "event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\","
      "\"item_id\":\"msg_1\",\"text\":\" Once upon\"}\n\n",
      out));
  out.clear();
  EXPECT_FALSE(r.rewrite_event(
      "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":"
      "\"resp_1\",\"model\":\"/x.gguf\",\"output\":[{\"content\":[{\"text\":\" Once upon\"}]}],"
      "\"usage\":{\"input_tokens\":30,\"output_tokens\":2,\"total_tokens\":32,"
      "\"input_tokens_details\":{\"cached_tokens\":24}}},\"timings\":{}}\n\n",
      out));
  EXPECT_NE(out.find(R"("model":"coder")"), std::string::npos) << out;
  ASSERT_TRUE(r.usage());
  EXPECT_EQ(r.usage()->prompt_tokens, 30);
  EXPECT_EQ(r.usage()->cached_tokens, 24);
  EXPECT_EQ(r.usage()->completion_tokens, 2);

  ResponseRewriter body_rewriter("coder", false);
  std::string body =
      R"({"completed_at":1,"created_at":1,"id":"resp_2","model":"/x.gguf","object":"response",)"
      R"("output":[],"status":"completed","usage":{"input_tokens":9,"output_tokens":4,)"
      R"("total_tokens":13,"input_tokens_details":{"cached_tokens":0}}})";
  body_rewriter.rewrite_body(body);
  EXPECT_NE(body.find(R"("model":"coder")"), std::string::npos);
  ASSERT_TRUE(body_rewriter.usage());
  EXPECT_EQ(body_rewriter.usage()->prompt_tokens, 9);
  EXPECT_EQ(body_rewriter.usage()->completion_tokens, 4);
}

TEST(ResponseRewriter, AnEmptyClientModelChangesNothing) {
  ResponseRewriter r("", false);
  std::string body = R"({"model":"/x.gguf","tokens":[1,2]})";
  r.rewrite_body(body);
  EXPECT_EQ(body, R"({"model":"/x.gguf","tokens":[1,2]})");
}

}  // namespace
}  // namespace switchyard::openai
