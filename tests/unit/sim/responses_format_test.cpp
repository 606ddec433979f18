// llama-server's Responses API conversion and shapes
// (tools/server/server-chat.cpp, server-task.cpp to_json_oaicompat_resp*).
#include "sim/responses_format.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "json_support.h"
#include "sim/llamacpp_format.h"

namespace switchyard::sim {
namespace {

namespace json = boost::json;

using test_json::events;
using test_json::keys;
using test_json::object;

TEST(ResponsesRequest, InstructionsAndInputBecomeChatMessages) {
  auto chat = responses::to_chat_request(
      object(R"({"instructions":"Be brief.","input":"Hi","max_output_tokens":7,"stream":true})"));
  ASSERT_TRUE(std::holds_alternative<json::object>(chat));
  auto& c = std::get<json::object>(chat);
  EXPECT_EQ(json::serialize(c["messages"]),
            R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}])");
  EXPECT_EQ(c["max_tokens"].as_int64(), 7);
  EXPECT_TRUE(c["stream"].as_bool());
  chat = responses::to_chat_request(
      object(R"({"input":[{"role":"developer","content":"Rules"},)"
             R"({"type":"message","role":"user","content":[{"type":"input_text","text":"A"},)"
             R"({"type":"input_text","text":"B"}]},{"type":"function_call_output","call_id":"c1",)"
             R"("output":"ok"},{"type":"reasoning","summary":[]}]})"));
  ASSERT_TRUE(std::holds_alternative<json::object>(chat));
  EXPECT_EQ(json::serialize(std::get<json::object>(chat)["messages"]),
            R"([{"role":"system","content":"Rules"},{"role":"user","content":"AB"},)"
            R"({"role":"tool","tool_call_id":"c1","content":"ok"}])");
}

TEST(ResponsesRequest, RefusesWhatLlamaServerRefuses) {
  const auto refusal = [](std::string_view body) {
    auto chat = responses::to_chat_request(object(body));
    EXPECT_TRUE(std::holds_alternative<RequestError>(chat)) << body;
    return std::holds_alternative<RequestError>(chat) ? std::get<RequestError>(chat).message
                                                      : std::string();
  };
  EXPECT_EQ(refusal(R"({"model":"m"})"), "'input' is required");
  EXPECT_EQ(refusal(R"({"input":"x","previous_response_id":"resp_1"})"),
            "llama.cpp does not support 'previous_response_id'.");
  EXPECT_EQ(refusal(R"({"input":[{"role":"user","content":[{"type":"audio"}]}]})"),
            "'type' must be one of 'input_text', 'input_image', or 'input_file'");
}

TEST(ResponsesFormat, BodyHasLlamaServersMembersInOrder) {
  CompletionJob job;
  job.endpoint = Endpoint::responses;
  job.model = "/models/sim.gguf";
  auto format = llamacpp::make_format(job, "abc", 1700000000);
  CompletionResult r;
  r.text = " Once upon";
  r.tokens = {400, 401};
  r.prompt_tokens = 46;
  r.cached_tokens = 6;
  const auto body = object(format->full_response(r).body);
  EXPECT_EQ(keys(body), (std::vector<std::string>{"completed_at", "created_at", "id", "model",
                                                  "object", "output", "status", "usage"}));
  EXPECT_EQ(body.at("id").as_string(), "resp_abc");
  EXPECT_EQ(body.at("model").as_string(), "/models/sim.gguf");
  EXPECT_EQ(json::serialize(body.at("output").at(0).at("content")),
            R"([{"type":"output_text","annotations":[],"logprobs":[],"text":" Once upon"}])");
  EXPECT_EQ(json::serialize(body.at("usage")),
            R"({"input_tokens":46,"output_tokens":2,"total_tokens":48,)"
            R"("input_tokens_details":{"cached_tokens":6}})");
}

TEST(ResponsesFormat, StreamIsLlamaServersNamedEventsWithoutDone) {
  CompletionJob job;
  job.endpoint = Endpoint::responses;
  job.model = "m";
  auto format = llamacpp::make_format(job, "abc", 1700000000);
  std::string stream;
  for (const auto& e : format->open_events(PromptStats{46, 0})) stream += e;
  stream += format->token_event(400, " Once", 1);
  stream += format->token_event(401, " upon", 2);
  CompletionResult r;
  r.text = " Once upon";
  r.tokens = {400, 401};
  r.prompt_tokens = 46;
  for (const auto& e : format->close_events(r)) stream += e;
  EXPECT_EQ(events(stream),
            (std::vector<std::string>{"response.created", "response.in_progress",
                                      "response.output_item.added", "response.content_part.added",
                                      "response.output_text.delta", "response.output_text.delta",
                                      "response.output_text.done", "response.content_part.done",
                                      "response.output_item.done", "response.completed"}));
  EXPECT_EQ(stream.find("[DONE]"), std::string::npos);
  EXPECT_NE(stream.find("event: response.output_text.delta\ndata: {\"type\":\"response.output_text."
                        "delta\",\"item_id\":\"msg_abc\",\"delta\":\" upon\"}\n\n"),
            std::string::npos);
  const auto last = stream.rfind("data: ");
  const auto completed = object(stream.substr(last + 6, stream.size() - last - 8));
  EXPECT_EQ(keys(completed), (std::vector<std::string>{"type", "response", "timings"}));
  EXPECT_EQ(completed.at("response").at("model").as_string(), "m");
  EXPECT_EQ(completed.at("response").at("usage").at("output_tokens").as_int64(), 2);
}

}  // namespace
}  // namespace switchyard::sim
