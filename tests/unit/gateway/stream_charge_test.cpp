#include "gateway/stream_charge.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "openai/response_rewrite.h"

namespace switchyard::gateway {
namespace {

using openai::ResponseRewriter;
using openai::Usage;

// llama-server's events (shared/reference/llamacpp/*.sse), trimmed.
std::string chat_chunk(const std::string& delta) {
  return R"(data: {"choices":[{"finish_reason":null,"index":0,"delta":)" + delta +
         R"(}],"created":1795993220,"id":"chatcmpl-1","model":"stories260K",)"
         R"("object":"chat.completion.chunk"})"
         "\n\n";
}
std::string anthropic_delta(const std::string& text) {
  return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
         "\"delta\":{\"type\":\"text_delta\",\"text\":\"" +
         text + "\"}}\n\n";
}

// Relays `events` as the forwarder does, counting the content events, and
// returns what the request is charged.
std::optional<Usage> relay(ResponseRewriter& rewriter, const std::vector<std::string>& events) {
  std::string out;
  std::int64_t relayed = 0;
  for (const auto& e : events) relayed += rewriter.rewrite_event(e, out);
  return charged_usage(rewriter.usage(), relayed);
}

TEST(StreamCharge, AChatStreamCutShortIsChargedTheContentEventsRelayed) {
  ResponseRewriter rewriter("m", /*strip_usage_chunk=*/true);
  std::vector<std::string> events{chat_chunk(R"({"role":"assistant","content":null})")};
  for (const char* t : {"A", "n", "n", "a", "b"})
    events.push_back(chat_chunk(std::string(R"({"content":")") + t + "\"}"));
  // The client left here: no usage chunk ever came.
  const auto charged = relay(rewriter, events);
  ASSERT_TRUE(charged);
  EXPECT_EQ(charged->completion_tokens, 5) << "the role chunk carries no token";
  EXPECT_EQ(charged->prompt_tokens, 0);
}

TEST(StreamCharge, AnAnthropicStreamCutShortKeepsItsInputTokensAndCountsItsDeltas) {
  ResponseRewriter rewriter("claude-local", false);
  const std::vector<std::string> events{
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\","
      "\"model\":\"/models/stories260K.gguf\",\"usage\":{\"cache_read_input_tokens\":45,"
      "\"input_tokens\":1,\"output_tokens\":0}}}\n\n",
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
      "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
      anthropic_delta("C"), anthropic_delta("om"), anthropic_delta("e")};
  const auto charged = relay(rewriter, events);
  ASSERT_TRUE(charged);
  EXPECT_EQ(charged->completion_tokens, 3);
  EXPECT_EQ(charged->prompt_tokens, 46)
      << "input_tokens plus the cached ones, as find_usage counts";
  EXPECT_EQ(charged->cached_tokens, 45);
}

TEST(StreamCharge, AWholeStreamIsChargedItsReportedUsage) {
  ResponseRewriter rewriter("m", true);
  std::vector<std::string> events;
  for (const char* t : {"A", "n"})
    events.push_back(chat_chunk(std::string(R"({"content":")") + t + "\"}"));
  events.push_back(R"(data: {"choices":[],"model":"stories260K","usage":{"prompt_tokens":12,)"
                   R"("completion_tokens":2,"total_tokens":14}})"
                   "\n\n");
  const auto charged = relay(rewriter, events);
  ASSERT_TRUE(charged);
  EXPECT_EQ(charged->prompt_tokens, 12);
  EXPECT_EQ(charged->completion_tokens, 2);
}

TEST(StreamCharge, NothingRelayedAndNothingReportedChargesNothing) {
  EXPECT_FALSE(charged_usage(std::nullopt, 0));
  const Usage body{7, 3, 0};  // a body's report, no events
  EXPECT_EQ(charged_usage(body, 0)->completion_tokens, 3);
}

}  // namespace
}  // namespace switchyard::gateway
