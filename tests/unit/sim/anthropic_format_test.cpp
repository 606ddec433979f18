// llama-server's Anthropic Messages conversion and shapes
// (shared/reference/llamacpp/messages_*).
#include "sim/anthropic_format.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "common/json_text.h"
#include "json_support.h"
#include "sim/llamacpp_format.h"

namespace switchyard::sim {
namespace {

namespace json = boost::json;

using test_json::events;
using test_json::keys;
using test_json::object;

json::object chat_of(std::string_view anthropic) {
  auto chat = anthropic::to_chat_request(object(anthropic));
  EXPECT_TRUE(std::holds_alternative<json::object>(chat));
  return std::get<json::object>(chat);
}

TEST(AnthropicRequest, SystemStringOrTextBlocksBecomeTheFirstMessage) {
  auto chat = chat_of(R"({"system":"Be brief.","messages":[{"role":"user","content":"Hi"}]})");
  EXPECT_EQ(json::serialize(chat["messages"]),
            R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}])");
  chat = chat_of(
      R"({"system":[{"type":"text","text":"A"},{"type":"image"},{"type":"text","text":"B"}],)"
      R"("messages":[]})");
  EXPECT_EQ(json::serialize(chat["messages"]), R"([{"role":"system","content":"AB"}])");
}

TEST(AnthropicRequest, BlocksKeepTheirTextAndToolResultsBecomeToolMessages) {
  auto chat = chat_of(
      R"({"messages":[{"role":"user","content":[{"type":"text","text":"look"},)"
      R"({"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"42"}]}]}]})");
  EXPECT_EQ(json::serialize(chat["messages"]),
            R"([{"role":"user","content":[{"type":"text","text":"look"}]},)"
            R"({"role":"tool","tool_call_id":"t1","content":"42"}])");
}

TEST(AnthropicRequest, MaxTokensDefaultsTo4096AndStopSequencesBecomeStop) {
  auto chat = chat_of(R"({"messages":[],"stop_sequences":["END"],"temperature":0.2})");
  EXPECT_EQ(chat["max_tokens"].as_int64(), 4096);
  EXPECT_EQ(json::serialize(chat["stop"]), R"(["END"])");
  EXPECT_EQ(chat["temperature"].as_double(), 0.2);
  EXPECT_EQ(chat_of(R"({"messages":[],"max_tokens":7})")["max_tokens"].as_int64(), 7);
}

TEST(AnthropicRequest, MissingMessagesIsLlamaServersServerError) {
  auto chat = anthropic::to_chat_request(object(R"({"max_tokens":5})"));
  ASSERT_TRUE(std::holds_alternative<RequestError>(chat));
  EXPECT_EQ(std::get<RequestError>(chat).status, 500);
  EXPECT_EQ(std::get<RequestError>(chat).message, "'messages' is required");
}

TEST(AnthropicRequest, ParsesIntoAMessagesJobWithTheChatTemplate) {
  Tokenizer tok;
  auto parsed = anthropic::parse_messages(
      object(
          R"({"model":"x","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"Hi"}]})"),
      tok, "served");
  ASSERT_TRUE(std::holds_alternative<CompletionJob>(parsed));
  const auto& job = std::get<CompletionJob>(parsed);
  EXPECT_EQ(job.endpoint, Endpoint::messages);
  EXPECT_EQ(job.max_tokens, 9);
  EXPECT_TRUE(job.stream);
  EXPECT_EQ(job.prompt_text, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(AnthropicFormat, MessageBodyHasTheCapturesKeysInOrder) {
  CompletionJob job;
  job.endpoint = Endpoint::messages;
  job.model = "/models/sim.gguf";
  auto format = llamacpp::make_format(job, "chatcmpl-x", 0);
  CompletionResult r;
  r.text = " Once upon";
  r.tokens = {400, 401};
  r.prompt_tokens = 46;
  r.cached_tokens = 6;
  const auto reply = format->full_response(r);
  EXPECT_EQ(reply.status, 200);
  const auto body = object(reply.body);
  EXPECT_EQ(keys(body), (std::vector<std::string>{"id", "type", "role", "content", "model",
                                                  "stop_reason", "stop_sequence", "usage"}));
  EXPECT_EQ(json::serialize(body.at("content")), R"([{"type":"text","text":" Once upon"}])");
  EXPECT_EQ(body.at("stop_reason").as_string(), "max_tokens");
  EXPECT_EQ(json::serialize(body.at("usage")),
            R"({"cache_read_input_tokens":6,"input_tokens":40,"output_tokens":2})");
  r.stopped = true;
  EXPECT_EQ(object(format->full_response(r).body).at("stop_reason").as_string(), "end_turn");
}

TEST(AnthropicFormat, StreamIsNamedEventsInTheCapturesOrderWithoutDone) {
  CompletionJob job;
  job.endpoint = Endpoint::messages;
  job.model = "m";
  auto format = llamacpp::make_format(job, "chatcmpl-x", 0);
  EXPECT_EQ(format->stream_headers().find("content-type").value_or(""), "text/event-stream");
  std::string stream;
  for (const auto& e : format->open_events(PromptStats{46, 45})) stream += e;
  EXPECT_NE(
      stream.find(R"("usage":{"cache_read_input_tokens":45,"input_tokens":1,"output_tokens":0})"),
      std::string::npos);
  stream += format->token_event(400, " Once", 1);
  stream += format->token_event(401, " upon", 2);
  CompletionResult r;
  r.tokens = {400, 401};
  for (const auto& e : format->close_events(r)) stream += e;
  EXPECT_EQ(events(stream),
            (std::vector<std::string>{"message_start", "content_block_start", "content_block_delta",
                                      "content_block_delta", "content_block_stop", "message_delta",
                                      "message_stop"}));
  EXPECT_EQ(stream.find("[DONE]"), std::string::npos);
  EXPECT_NE(stream.find("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{"
                        "\"stop_reason\":\"max_tokens\",\"stop_sequence\":null},\"usage\":{"
                        "\"output_tokens\":2}}\n\n"),
            std::string::npos);
}

}  // namespace
}  // namespace switchyard::sim
