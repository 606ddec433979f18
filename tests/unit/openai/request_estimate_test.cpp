// The one request estimate admission, the profile policy and the router read.
#include "openai/request_estimate.h"

#include <gtest/gtest.h>

#include <string>

namespace switchyard::openai {
namespace {

TokenEstimate estimate(const std::string& body, std::int64_t assumed_output) {
  RequestInspector inspector;
  auto facts = inspector.inspect(body, Endpoint::chat_completions);
  EXPECT_TRUE(facts) << body;
  return estimate_tokens(*facts, assumed_output);
}

TEST(RequestEstimate, TheOutputIsTheRequestsOwnMaxTokensNotAFieldOfThatNameInsideIt) {
  // A tool whose parameters name a property "max_tokens", before the
  // request's own: the profile policy's old scan of the raw body took the
  // first and, finding no number after it, assumed 256.
  const std::string body =
      R"({"model":"m","tools":[{"type":"function","function":{"name":"gen","parameters":)"
      R"({"type":"object","properties":{"max_tokens":{"type":"integer"}}}}}],)"
      R"("messages":[{"role":"user","content":"hi"}],"max_tokens":64})";
  EXPECT_EQ(estimate(body, 256).output, 64);
  EXPECT_EQ(estimate(R"({"model":"m","messages":[{"role":"user","content":"hi"}]})", 256).output,
            256);
  EXPECT_EQ(
      estimate(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"n_predict":9})", 1024)
          .output,
      9);
}

TEST(RequestEstimate, APromptIsAboutFourBytesAToken) {
  const auto e =
      estimate(R"({"model":"m","messages":[{"role":"user","content":"hello there"}]})", 0);
  // The messages' JSON text: [{"role":"user","content":"hello there"}], 41 bytes.
  EXPECT_EQ(e.prompt, 41 / 4);
  EXPECT_EQ(prompt_tokens_estimate(4096), 1024);
}

}  // namespace
}  // namespace switchyard::openai
